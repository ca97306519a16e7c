//! The machine's share of work, across every sweep (and every paper of `reproduce all`)
//! of this process. Two classes of work:
//! - lane work counts, not time: a simulation (its instruction and miss counts do not
//!   depend on what runs beside it). Each takes one lane, at most `cap` at once (one per
//!   core: `sweep::jobs(Kind::Simulate)`);
//! - a measured window: the warm-up and measured time of a native run or profile, whose
//!   throughput would move with anything beside it. Nothing of this process runs beside
//!   it.
//!
//! A window does not wait for lane work to end: it stops it. A simulation's child and a
//! load measured runs share ([`stoppable_output`], beside the lanes) are *stoppable*: at
//! a window's start every stoppable child and its descendants get `SIGSTOP`, and
//! `SIGCONT` at its end. Work
//! that cannot be stopped (in-process work: plots, [`unstoppable`]) takes no lane, and a
//! window waits for it to end; while a window waits, no such work starts. So the
//! simulations that fill both cores no longer keep the measured windows waiting, and a
//! window is still alone on the machine (stopped processes keep their memory, not a
//! core).
//!
//! A measured repetition ([`Measured`]) loads and closes beside the lanes (its child at
//! normal priority, the simulations' children at a lower one: the measured chain is the
//! one that decides when a sweep ends); its child stops at its gate (`driver::gate`) after
//! the load and its window runs alone. Its child is stoppable work like a simulation's
//! but during its own window: another's window stops its load, its wait at the gate
//! (its engine's threads) and its close. [`TURNS`] measured repetitions at a time are
//! between their load's start and their window's end (the measured turns), so that one
//! loads while the other runs its window.

use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Measured repetitions between their load's start and their window's end at once: one
/// loads (stoppable, so no window sees it) while the other runs its window or waits for
/// it, so the windows follow each other without a load between them.
pub(crate) const TURNS: usize = 2;

/// The niceness of lane work's children: below a measured repetition's load and close
/// and a shared load ([`stoppable_output`]), which decide when the sweep ends; their
/// figures do not depend on it.
pub(crate) const LANE_NICE: i32 = 10;

pub(crate) struct Lanes {
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    /// Lanes held.
    held: usize,
    /// Work no window can stop: in-process work ([`unstoppable`]), and lanes whose child
    /// is not started yet.
    unstoppable: usize,
    /// Stoppable processes running (each with its descendants): lane work's children,
    /// shared loads and measured repetitions' children (but during their own window).
    children: Vec<u32>,
    /// A window runs, and the processes it stopped (in the order stopped).
    window: bool,
    stopped: Vec<u32>,
    /// Requests ever made (so `asked` can say whether any was).
    asked: u64,
    /// Tickets of each class: handed out and the next one served (FIFO).
    lane_next: u64,
    lane_serving: u64,
    window_next: u64,
    window_serving: u64,
    /// Measured turns taken (at most [`TURNS`]), and their tickets (FIFO).
    turns: usize,
    turn_next: u64,
    turn_serving: u64,
}

impl State {
    fn window_waits(&self) -> bool {
        self.window_serving != self.window_next
    }
}

pub(crate) static LANES: Lanes = Lanes::new();

/// One lane, given back when dropped.
pub(crate) struct Lane<'a> {
    lanes: &'a Lanes,
    /// Counted as unstoppable (its child not registered yet).
    unstoppable: bool,
}

/// A running window: every stopped process continues when it is dropped.
pub(crate) struct Window<'a>(&'a Lanes);

impl Lanes {
    pub(crate) const fn new() -> Lanes {
        Lanes {
            state: Mutex::new(State {
                held: 0,
                unstoppable: 0,
                children: Vec::new(),
                window: false,
                stopped: Vec::new(),
                asked: 0,
                lane_next: 0,
                lane_serving: 0,
                window_next: 0,
                window_serving: 0,
                turns: 0,
                turn_next: 0,
                turn_serving: 0,
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'g>(&self, st: MutexGuard<'g, State>) -> MutexGuard<'g, State> {
        self.changed.wait(st).unwrap_or_else(|e| e.into_inner())
    }

    /// One lane of `cap`, as soon as one is free, no window runs and the lane requests
    /// before it are served. Its work is a child ([`Lane::run_by`]); until it starts, a
    /// window waits.
    pub(crate) fn lane(&self, cap: usize) -> Lane<'_> {
        let mut st = self.lock();
        st.asked += 1;
        let ticket = st.lane_next;
        st.lane_next += 1;
        while st.lane_serving != ticket || st.held >= cap.max(1) || st.window {
            st = self.wait(st);
        }
        st.held += 1;
        // Unstoppable until its child is registered.
        st.unstoppable += 1;
        st.lane_serving += 1;
        self.changed.notify_all();
        Lane {
            lanes: self,
            unstoppable: true,
        }
    }

    /// Work that cannot be stopped, outside the lanes: once no window runs or waits.
    pub(crate) fn unstoppable(&self) -> Unstoppable<'_> {
        let mut st = self.lock();
        st.asked += 1;
        while st.window || st.window_waits() {
            st = self.wait(st);
        }
        st.unstoppable += 1;
        Unstoppable(self)
    }

    /// A window: once the windows asked before have run and no unstoppable lane work
    /// runs, every stoppable process but `own` (the measured child itself) is stopped
    /// until the window is dropped.
    pub(crate) fn window(&self, own: Option<u32>) -> Window<'_> {
        let mut st = self.lock();
        st.asked += 1;
        let ticket = st.window_next;
        st.window_next += 1;
        while st.window_serving != ticket || st.window || st.unstoppable > 0 {
            st = self.wait(st);
        }
        st.window_serving += 1;
        st.window = true;
        continue_on_signal();
        // Stopped under the lock: no child registers or ends half-way through.
        let mut stopped = Vec::new();
        for &pid in st.children.iter().filter(|&&p| Some(p) != own) {
            stop_tree(pid, &mut stopped);
        }
        st.stopped = stopped;
        self.changed.notify_all();
        Window(self)
    }

    /// `pid`, a child of this process, runs stoppable work until [`Lanes::ended`].
    fn register(st: &mut State, pid: u32) {
        st.children.push(pid);
        if st.window {
            // A measured repetition's child started during another's window (lane work's
            // cannot: no lane is given during a window, and a window waits for a lane's
            // child to be registered).
            let mut more = Vec::new();
            stop_tree(pid, &mut more);
            st.stopped.extend(more);
        }
    }

    /// `pid` has ended but is not reaped yet (so its number is not anyone else's): no
    /// window may signal it from now on.
    fn ended(&self, pid: u32) {
        let mut st = self.lock();
        st.children.retain(|&p| p != pid);
        // Stopped during a window and ended (killed): not continued once reaped. Its
        // descendants, stopped, keep their numbers and are continued with the rest.
        st.stopped.retain(|&p| p != pid);
        self.changed.notify_all();
    }

    /// A measured turn, once the repetitions asking before have had theirs and fewer
    /// than [`TURNS`] are taken.
    fn take_turn(&self) {
        let mut st = self.lock();
        st.asked += 1;
        let ticket = st.turn_next;
        st.turn_next += 1;
        while st.turn_serving != ticket || st.turns >= TURNS {
            st = self.wait(st);
        }
        st.turns += 1;
        st.turn_serving += 1;
        self.changed.notify_all();
    }

    fn give_turn(&self) {
        let mut st = self.lock();
        st.turns -= 1;
        self.changed.notify_all();
    }

    /// How many requests (lanes, windows, measured turns) were made so far.
    pub(crate) fn asked(&self) -> u64 {
        self.lock().asked
    }

    #[cfg(test)]
    fn idle(&self) -> bool {
        let st = self.lock();
        st.held == 0
            && st.unstoppable == 0
            && st.children.is_empty()
            && !st.window
            && st.stopped.is_empty()
            && st.turns == 0
    }
}

impl Lane<'_> {
    /// The lane's work is the child `pid` (and its descendants), stoppable by a window
    /// from now until it ends ([`wait_child`]).
    pub(crate) fn run_by(&mut self, pid: u32) {
        assert!(self.unstoppable, "a lane runs one child");
        // One hold of the lock: a window starting in between would miss the child.
        let mut st = self.lanes.lock();
        st.unstoppable -= 1;
        self.unstoppable = false;
        Lanes::register(&mut st, pid);
        self.lanes.changed.notify_all();
    }
}

impl Drop for Lane<'_> {
    fn drop(&mut self) {
        let mut st = self.lanes.lock();
        st.held -= 1;
        if self.unstoppable {
            st.unstoppable -= 1;
        }
        self.lanes.changed.notify_all();
    }
}

impl Drop for Window<'_> {
    fn drop(&mut self) {
        let mut st = self.0.lock();
        let stopped = std::mem::take(&mut st.stopped);
        cont_all(&stopped);
        st.window = false;
        self.0.changed.notify_all();
    }
}

/// A measured repetition's share of the machine through its phases (see the module's
/// doc): its load beside the lanes, a window from its go to its window's end, its close
/// stoppable.
pub(crate) struct Measured<'a> {
    lanes: &'a Lanes,
    window: Option<Window<'a>>,
    turn: bool,
    child: Option<u32>,
    /// A resident child's (`resident`): the turn is held from its load to its end, through
    /// all its windows, so that no more than [`TURNS`] children hold a database at once.
    keep_turn: bool,
}

impl<'a> Measured<'a> {
    /// The measured turn; the load then runs.
    pub(crate) fn start(lanes: &'a Lanes) -> Measured<'a> {
        lanes.take_turn();
        Measured {
            lanes,
            window: None,
            turn: true,
            child: None,
            keep_turn: false,
        }
    }

    /// A resident child's share (`crate::resident`): a measured turn from its load to its
    /// end, a window for each of its runs.
    pub(crate) fn resident(lanes: &'a Lanes) -> Measured<'a> {
        let mut m = Measured::start(lanes);
        m.keep_turn = true;
        m
    }

    /// How many processes the window running now stopped (0 outside a window).
    pub(crate) fn stopped(&self) -> usize {
        match &self.window {
            Some(w) => w.0.lock().stopped.len(),
            None => 0,
        }
    }

    /// The repetition's child is `pid`: its load is stoppable by another's window.
    pub(crate) fn spawned(&mut self, pid: u32) {
        self.child = Some(pid);
        Lanes::register(&mut self.lanes.lock(), pid);
    }

    /// The child is loaded and waits at its gate: a window. A child running several
    /// runs (`--alone`) takes the turn again here.
    pub(crate) fn ready(&mut self) {
        if !self.turn {
            self.lanes.take_turn();
            self.turn = true;
        }
        if self.window.is_none() {
            self.window = Some(self.lanes.window(self.child));
        }
    }

    /// The window is over: the close and checks are stoppable again; the turn passes on.
    pub(crate) fn window_ended(&mut self) {
        self.window = None;
        if self.turn && !self.keep_turn {
            self.turn = false;
            self.lanes.give_turn();
        }
    }
}

impl Drop for Measured<'_> {
    fn drop(&mut self) {
        self.window = None;
        if self.turn {
            self.lanes.give_turn();
        }
    }
}

/// What a repetition's child holds of the machine: a lane (a simulation) or a measured
/// repetition's phases.
pub(crate) enum Share<'a> {
    Lane(Lane<'a>),
    Measured(Measured<'a>),
}

impl<'a> Share<'a> {
    /// The repetition's child `pid` has started.
    pub(crate) fn spawned(&mut self, pid: u32) {
        match self {
            Share::Lane(l) => l.run_by(pid),
            Share::Measured(m) => m.spawned(pid),
        }
    }

    pub(crate) fn measured(&mut self) -> Option<&mut Measured<'a>> {
        match self {
            Share::Lane(_) => None,
            Share::Measured(m) => Some(m),
        }
    }

    pub(crate) fn lanes(&self) -> &'a Lanes {
        match self {
            Share::Lane(l) => l.lanes,
            Share::Measured(m) => m.lanes,
        }
    }
}

/// Wait for `child` to end, then reap it. In between, once it has ended and while its
/// number is still its own, it is taken off the stoppable processes: a window never
/// signals a number another process may have taken.
pub(crate) fn wait_child(child: &mut Child, lanes: &Lanes) -> std::io::Result<ExitStatus> {
    let pid = child.id();
    loop {
        // SAFETY: a zeroed siginfo_t is a valid out-parameter; waitid writes it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waits for our own unreaped child without reaping it (WNOWAIT).
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            lanes.ended(pid);
            return Err(e);
        }
    }
    lanes.ended(pid);
    child.wait()
}

/// Run `cmd` to its end beside the lanes, as a measured repetition's load runs, and
/// stoppable by every window: work the measured repetitions wait for (a load of a
/// database they share). In the lanes' queue it would wait for the simulations ahead of
/// it (a shared 1MB load waited 192 s there, session 65) and hold back every run on it.
/// Collects its output as `Command::output` does.
pub fn stoppable_output(mut cmd: Command) -> std::io::Result<Output> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn()?;
    Lanes::register(&mut LANES.lock(), child.id());
    let (out, err) = (child.stdout.take(), child.stderr.take());
    std::thread::scope(|sc| {
        let read = |p: Option<Box<dyn std::io::Read + Send>>| {
            sc.spawn(move || {
                let mut v = Vec::new();
                if let Some(mut p) = p {
                    let _ = p.read_to_end(&mut v);
                }
                v
            })
        };
        let o = read(out.map(|o| Box::new(o) as Box<dyn std::io::Read + Send>));
        let e = read(err.map(|e| Box::new(e) as Box<dyn std::io::Read + Send>));
        let status = wait_child(&mut child, &LANES);
        let stdout = o.join().expect("the stdout reader does not panic");
        let stderr = e.join().expect("the stderr reader does not panic");
        status.map(|status| Output {
            status,
            stdout,
            stderr,
        })
    })
}

/// [`stoppable_output`] for a child whose output is only its error: `Err` when it
/// cannot start; `Ok(Err(line))` when it failed, with the last non-empty line of its
/// stderr (its one-line error, exit code 2) or "no message".
pub fn stoppable_run(cmd: Command) -> std::io::Result<Result<(), String>> {
    let out = stoppable_output(cmd)?;
    if out.status.success() {
        return Ok(Ok(()));
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.lines().rev().find(|l| !l.trim().is_empty());
    Ok(Err(last.unwrap_or("no message").trim().to_string()))
}

/// Start `cmd`'s child at [`LANE_NICE`].
pub(crate) fn lower_priority(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setpriority is async-signal-safe and touches no memory of ours; a failure
    // leaves the child at normal priority, which changes no figure.
    unsafe {
        cmd.pre_exec(|| {
            libc::setpriority(libc::PRIO_PROCESS, 0, LANE_NICE);
            Ok(())
        });
    }
}

/// Run `f`, work that cannot be stopped (in-process work: plots, a paper's output), never
/// beside a measured window of this process: it waits while a window runs or waits, and
/// a window waits for it. It takes no lane: it is short, and behind the simulations in
/// the lanes' queue it would wait for them (a sweep's figures held the next sweep back by
/// minutes).
pub fn unstoppable<T>(f: impl FnOnce() -> T) -> T {
    let _w = LANES.unstoppable();
    f()
}

/// Work that cannot be stopped and holds no lane (see [`unstoppable`]).
pub(crate) struct Unstoppable<'a>(&'a Lanes);

impl Drop for Unstoppable<'_> {
    fn drop(&mut self) {
        let mut st = self.0.lock();
        st.unstoppable -= 1;
        self.0.changed.notify_all();
    }
}

/// Once a window may stop processes: on SIGINT, SIGTERM or SIGHUP this process
/// continues the processes a window of [`LANES`] stopped, then dies of the signal as by
/// default. Killed otherwise, a stopped child would keep the signal pending (its
/// parent-death SIGTERM too) and stay stopped for ever.
fn continue_on_signal() {
    static WATCH: std::sync::Once = std::sync::Once::new();
    WATCH.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
        else {
            // Not fatal: an interrupted sweep then leaves its stopped children stopped
            // until they are killed.
            eprintln!("warning: cannot watch for Ctrl-C: a sweep stopped by it may leave simulations stopped");
            return;
        };
        let _ = std::thread::Builder::new()
            .name("lanes-signals".into())
            .spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    let mut st = LANES.lock();
                    let stopped = std::mem::take(&mut st.stopped);
                    cont_all(&stopped);
                    let _ = signal_hook::low_level::emulate_default_handler(sig);
                    std::process::exit(128 + sig);
                }
            });
    });
}

/// Stop `pid`, then its descendants (each stopped before its children are read: a
/// stopped process neither forks nor reaps, so the numbers read stay theirs), appending
/// each process stopped to `out`.
fn stop_tree(pid: u32, out: &mut Vec<u32>) {
    // SAFETY: kill with a valid signal number has no memory effects.
    if unsafe { libc::kill(pid as libc::pid_t, libc::SIGSTOP) } != 0 {
        return;
    }
    out.push(pid);
    wait_stopped(pid);
    for c in children(pid) {
        stop_tree(c, out);
    }
}

/// Continue the processes of `stopped`, the last stopped first (children before their
/// parents, so none is reaped before it is continued).
fn cont_all(stopped: &[u32]) {
    for &pid in stopped.iter().rev() {
        // SAFETY: as in `stop_tree`.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGCONT) };
    }
}

/// Wait until `pid` is stopped (or gone), at most half a second: a process inside a long
/// system call stops when it returns, and a window does not wait for it longer.
fn wait_stopped(pid: u32) {
    let t0 = Instant::now();
    while !matches!(proc_state(pid), None | Some('T' | 't' | 'Z' | 'X')) {
        if t0.elapsed() > Duration::from_millis(500) {
            return;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// A process's state letter (`/proc/PID/stat`'s third field); None once it is gone.
pub(crate) fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the state follows the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.trim_start().chars().next()
}

/// The children of every thread of `pid`.
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for t in tasks.flatten() {
        if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
            out.extend(s.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};

    fn pause(ms: u64) {
        std::thread::sleep(Duration::from_millis(ms));
    }

    #[test]
    fn a_measured_window_never_overlaps_other_work() {
        // Many threads take lanes for in-process work, windows and measured repetitions
        // (a turn, a window, then a close) at once; each checks, on entry and after a
        // pause, that nothing unstoppable runs beside a window, that no more than `cap`
        // lanes are held and that at most `TURNS` measured repetitions at a time are
        // between their load and their window's end. Any overlap fails the test.
        let (lanes, cap) = (std::sync::Arc::new(Lanes::new()), 2);
        // `cap` lanes are granted side by side: one thread holds them all at once (asked
        // here, not left to the threads below to meet by chance, which four copies of
        // this binary on two cores kept apart in 3 runs of 1,040, session 76). A thread of
        // its own, so that a wrong cap fails the test instead of hanging it.
        let (tx, rx) = std::sync::mpsc::channel();
        let both = std::sync::Arc::clone(&lanes);
        std::thread::spawn(move || {
            let held: Vec<_> = (0..cap).map(|_| both.lane(cap)).collect();
            let n = held.len();
            // Given back before the answer, so the threads below start on idle lanes.
            drop(held);
            tx.send(n).unwrap();
        });
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(30)),
            Ok(cap),
            "lanes not granted side by side"
        );
        assert!(lanes.idle());
        let (inside, window_in) = (AtomicUsize::new(0), AtomicBool::new(false));
        let (windows, loading) = (AtomicUsize::new(0), AtomicUsize::new(0));
        // A lane whose child never starts: unstoppable, as in-process work is.
        let lane_work = |ms| {
            let _lane = lanes.lane(cap);
            let n = inside.fetch_add(1, SeqCst) + 1;
            assert!(
                !window_in.load(SeqCst),
                "lane work beside a measured window"
            );
            assert!(n <= cap, "{n} lanes held of {cap}");
            pause(ms);
            assert!(
                !window_in.load(SeqCst),
                "a measured window beside lane work"
            );
            inside.fetch_sub(1, SeqCst);
        };
        let window = || {
            assert_eq!(inside.load(SeqCst), 0, "a window started beside lane work");
            window_in.store(true, SeqCst);
            pause(2);
            assert_eq!(inside.load(SeqCst), 0, "lane work started beside a window");
            window_in.store(false, SeqCst);
            windows.fetch_add(1, SeqCst);
        };
        std::thread::scope(|sc| {
            for t in 0..6u64 {
                let (lanes, lane_work, window, loading) = (&lanes, &lane_work, &window, &loading);
                let window_in = &window_in;
                sc.spawn(move || {
                    for i in 0..12u64 {
                        match (t * 7 + i * 3) % 6 {
                            0 => {
                                let _w = lanes.window(None);
                                window();
                            }
                            1 | 2 => {
                                let mut m = Measured::start(lanes);
                                let n = loading.fetch_add(1, SeqCst);
                                assert!(n < TURNS, "{} loaded at once", n + 1);
                                pause(1);
                                m.ready();
                                window();
                                loading.fetch_sub(1, SeqCst);
                                m.window_ended();
                            }
                            3 => {
                                let _u = lanes.unstoppable();
                                assert!(!window_in.load(SeqCst), "in-process work beside a window");
                                pause(1);
                                assert!(!window_in.load(SeqCst), "a window beside in-process work");
                            }
                            _ => lane_work(1),
                        }
                    }
                });
            }
        });
        assert_eq!(windows.load(SeqCst), 36);
        assert!(lanes.idle());
    }

    /// A child that spins until killed.
    fn spinner() -> Child {
        Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .stdin(Stdio::null())
            .spawn()
            .expect("sh starts")
    }

    fn cpu_ticks(pid: u32) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let f: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        // utime and stime: fields 14 and 15, the 12th and 13th after the state.
        f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
    }

    #[test]
    fn a_window_stops_lane_children_and_their_descendants_until_it_ends() {
        let lanes = Lanes::new();
        // A stoppable lane whose child has a child of its own, both spinning.
        let mut lane = lanes.lane(2);
        let mut parent = Command::new("sh")
            .args(["-c", "sh -c 'while :; do :; done' & while :; do :; done"])
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let pid = parent.id();
        lane.run_by(pid);
        let grandchild = (0..200)
            .find_map(|_| {
                pause(5);
                children(pid).first().copied()
            })
            .expect("the child forks");
        let w = lanes.window(None);
        for p in [pid, grandchild] {
            assert_eq!(proc_state(p), Some('T'), "{p} stopped during the window");
        }
        let before = (cpu_ticks(pid), cpu_ticks(grandchild));
        pause(150);
        assert_eq!(
            (cpu_ticks(pid), cpu_ticks(grandchild)),
            before,
            "no CPU while stopped"
        );
        drop(w);
        pause(20);
        for p in [pid, grandchild] {
            assert_ne!(proc_state(p), Some('T'), "{p} runs again after the window");
        }
        // SAFETY: signals our own children.
        unsafe {
            libc::kill(grandchild as libc::pid_t, libc::SIGKILL);
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
        }
        let st = wait_child(&mut parent, &lanes).unwrap();
        assert!(!st.success());
        drop(lane);
        assert!(lanes.idle());
    }

    #[test]
    fn a_window_waits_for_unstoppable_work_and_holds_back_more_of_it() {
        let lanes = Lanes::new();
        let fixed = lanes.unstoppable();
        std::thread::scope(|sc| {
            let (tx, rx) = std::sync::mpsc::channel();
            let lanes = &lanes;
            let w = sc.spawn(move || {
                let w = lanes.window(None);
                tx.send("window").unwrap();
                pause(30);
                drop(w);
            });
            let wait = Duration::from_millis(50);
            assert!(rx.recv_timeout(wait).is_err(), "in-process work runs");
            // More in-process work waits behind the waiting window.
            let (tx2, rx2) = std::sync::mpsc::channel();
            sc.spawn(move || {
                let _l = lanes.unstoppable();
                tx2.send(()).unwrap();
            });
            assert!(
                rx2.recv_timeout(wait).is_err(),
                "held back while a window waits"
            );
            drop(fixed);
            assert_eq!(rx.recv().unwrap(), "window");
            w.join().unwrap();
            rx2.recv().unwrap();
        });
        assert!(lanes.idle());
    }

    #[test]
    fn a_measured_close_is_stopped_by_the_next_window() {
        let lanes = Lanes::new();
        let mut first = Measured::start(&lanes);
        let mut close = spinner();
        first.spawned(close.id());
        first.ready();
        first.window_ended();
        // The next repetition's window stops the first one's close.
        let mut second = Measured::start(&lanes);
        second.ready();
        assert_eq!(proc_state(close.id()), Some('T'));
        second.window_ended();
        pause(20);
        assert_ne!(proc_state(close.id()), Some('T'));
        close.kill().unwrap();
        wait_child(&mut close, &lanes).unwrap();
        drop((first, second));
        assert!(lanes.idle());
    }

    #[test]
    fn a_loading_neighbour_is_stopped_by_a_window_but_its_own_is_not() {
        let lanes = Lanes::new();
        let (mut a, mut b) = (Measured::start(&lanes), Measured::start(&lanes));
        let (mut ca, mut cb) = (spinner(), spinner());
        a.spawned(ca.id());
        b.spawned(cb.id());
        // `a` is at its gate and gets its window; `b`, loading, is stopped.
        a.ready();
        assert_eq!(proc_state(cb.id()), Some('T'));
        assert_ne!(
            proc_state(ca.id()),
            Some('T'),
            "a window never stops its own child"
        );
        assert_eq!(a.stopped(), 1);
        // A third repetition waits for a turn until one is given back.
        std::thread::scope(|sc| {
            let (tx, rx) = std::sync::mpsc::channel();
            let lanes = &lanes;
            sc.spawn(move || {
                let c = Measured::start(lanes);
                tx.send(()).unwrap();
                drop(c);
            });
            assert!(
                rx.recv_timeout(Duration::from_millis(50)).is_err(),
                "{TURNS} turns"
            );
            a.window_ended();
            rx.recv().unwrap();
        });
        pause(20);
        assert_ne!(
            proc_state(cb.id()),
            Some('T'),
            "it loads on after the window"
        );
        b.ready();
        b.window_ended();
        for c in [&mut ca, &mut cb] {
            c.kill().unwrap();
            wait_child(c, &lanes).unwrap();
        }
        drop((a, b));
        assert!(lanes.idle());
    }

    #[test]
    fn an_ended_child_is_never_signalled() {
        let lanes = Lanes::new();
        let mut lane = lanes.lane(1);
        let mut child = Command::new("true").spawn().unwrap();
        lane.run_by(child.id());
        assert!(wait_child(&mut child, &lanes).unwrap().success());
        // Taken off before it was reaped: a window has nothing to stop.
        let w = lanes.window(None);
        assert!(lanes.lock().stopped.is_empty());
        drop(w);
        drop(lane);
        assert!(lanes.idle());
    }
}
