//! Lock modes: the IS/IX/S/SIX/X compatibility matrix, the supremum (least upper bound)
//! used for upgrades and group modes, and which intention a mode needs on its ancestors.
//!
//! Pure functions on tables; this module must never touch the lock table or wait.

/// A lock mode. The order of the variants is the index into the matrices below.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum LockMode {
    /// Intention shared: the transaction will take S (or IS) locks on descendants.
    IS = 0,
    /// Intention exclusive: the transaction will take X (or any) locks on descendants.
    IX = 1,
    /// Shared: read the resource and, implicitly, all its descendants.
    S = 2,
    /// Shared + intention exclusive: read everything below, write some descendants.
    SIX = 3,
    /// Exclusive: read and write the resource and all its descendants.
    X = 4,
}

use LockMode::*;

const Y: bool = true;
const N: bool = false;

/// `COMPAT[a][b]`: may one transaction hold `a` while another holds `b` (symmetric).
const COMPAT: [[bool; 5]; 5] = [
    //          IS IX  S SIX  X
    /* IS  */ [Y, Y, Y, Y, N],
    /* IX  */ [Y, Y, N, N, N],
    /* S   */ [Y, N, Y, N, N],
    /* SIX */ [Y, N, N, N, N],
    /* X   */ [N, N, N, N, N],
];

/// `SUP[a][b]`: the weakest mode at least as strong as both (IS < IX, S < SIX < X).
const SUP: [[LockMode; 5]; 5] = [
    //          IS   IX   S    SIX  X
    /* IS  */ [IS, IX, S, SIX, X],
    /* IX  */ [IX, IX, SIX, SIX, X],
    /* S   */ [S, SIX, S, SIX, X],
    /* SIX */ [SIX, SIX, SIX, SIX, X],
    /* X   */ [X, X, X, X, X],
];

// The matrices are those of a lock hierarchy, checked as the crate builds: the
// compatibility is symmetric; the supremum commutative, idempotent and an upper bound
// that covers both modes, and a mode compatible with it is compatible with both.
const _: () = {
    let mut a = 0;
    while a < 5 {
        assert!(SUP[a][a] as usize == a);
        let mut b = 0;
        while b < 5 {
            let s = SUP[a][b] as usize;
            assert!(COMPAT[a][b] == COMPAT[b][a] && s == SUP[b][a] as usize);
            assert!(SUP[s][a] as usize == s && SUP[s][b] as usize == s);
            let mut c = 0;
            while c < 5 {
                assert!(!COMPAT[s][c] || (COMPAT[a][c] && COMPAT[b][c]));
                c += 1;
            }
            b += 1;
        }
        a += 1;
    }
};

/// `COMPAT_MASK[a]`: bit `b` set when `a` and `b` are compatible. Lets a lock head test a
/// request against the set of granted modes (one bit per mode) in one AND.
pub(super) const COMPAT_MASK: [u8; 5] = {
    let mut m = [0u8; 5];
    let mut a = 0;
    while a < 5 {
        let mut b = 0;
        while b < 5 {
            if COMPAT[a][b] {
                m[a] |= 1 << b;
            }
            b += 1;
        }
        a += 1;
    }
    m
};

impl LockMode {
    pub const ALL: [LockMode; 5] = [IS, IX, S, SIX, X];

    #[inline]
    pub(super) fn index(self) -> usize {
        self as usize
    }

    #[inline]
    pub(super) fn bit(self) -> u8 {
        1 << (self as u8)
    }

    /// Whether two different transactions may hold `self` and `other` at once.
    #[inline]
    pub fn compatible(self, other: LockMode) -> bool {
        COMPAT[self.index()][other.index()]
    }

    /// Whether `self` is compatible with every mode whose bit is set in `mask`.
    #[inline]
    pub(super) fn compatible_with_mask(self, mask: u8) -> bool {
        mask & !COMPAT_MASK[self.index()] == 0
    }

    /// The least mode that grants everything `self` and `other` grant (for upgrades).
    #[inline]
    pub fn supremum(self, other: LockMode) -> LockMode {
        SUP[self.index()][other.index()]
    }

    /// Whether holding `self` already grants everything `other` would.
    #[inline]
    pub fn covers(self, other: LockMode) -> bool {
        self.supremum(other) == self
    }

    /// The intention mode the parent must be held in before a child is locked in `self`.
    #[inline]
    pub fn intention(self) -> LockMode {
        match self {
            IS | S => IS,
            IX | SIX | X => IX,
        }
    }

    /// Whether holding `self` on an ancestor implicitly grants `child` on every
    /// descendant (S and SIX grant reads below; X grants everything).
    #[inline]
    pub fn implies_below(self, child: LockMode) -> bool {
        match self {
            X => true,
            S | SIX => matches!(child, IS | S),
            IS | IX => false,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            IS => "IS",
            IX => "IX",
            S => "S",
            SIX => "SIX",
            X => "X",
        }
    }
}
