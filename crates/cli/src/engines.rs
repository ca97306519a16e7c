//! The registry of engine designs: one line per engine, in `registry!` below. From it
//! come `--engine`'s values and their help ([`EngineName`], named and described by each
//! engine's [`api::Descriptor`]), and the descriptor the rest of `cli` asks instead of
//! matching on engines: how to open it (as an `api::Database`, what the driver runs
//! on), whether it is durable, whose directory a directory is, where its database goes
//! from `--db`/`--log-dir`/`--log`, which files `drop` removes.
//!
//! Adding an engine: its crate (an `api::Engine` with its descriptor) and one line in
//! `registry!` here.
//! `EngineName` stays an enum (generated, one variant per line) rather than a string:
//! `cli` compares engines in a few places where a flag belongs to one engine (the disk
//! engine's `--bpool-size`), and a variant is checked by the compiler where a name is not.

use api::Descriptor;

/// The registry: `registry! { Variant => Type, ... }` defines [`EngineName`] (one
/// variant per line).
macro_rules! registry {
    ($($V:ident => $T:ty),* $(,)?) => {
        /// An engine design, as `--engine` names it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum EngineName {
            $($V),*
        }

        impl EngineName {
            /// Every engine, in the registry's order.
            pub const ALL: &'static [EngineName] = &[$(EngineName::$V),*];

            /// The engine's descriptor.
            pub fn descriptor(self) -> &'static Descriptor {
                match self {
                    $(EngineName::$V => {
                        const D: Descriptor = Descriptor::of::<$T>();
                        &D
                    })*
                }
            }
        }
    };
}

registry! {
    Memory => engine_memory::MemoryEngine,
    Disk => engine_disk::DiskEngine,
    Serial => engine_serial::SerialEngine,
    Mvcc => engine_mvcc::MvccEngine,
    Partitioned => engine_partitioned::PartitionedEngine,
    Sqlite => engine_sqlite::SqliteEngine,
    Postgres => engine_postgres::PostgresEngine,
}

impl EngineName {
    pub fn as_str(self) -> &'static str {
        self.descriptor().name
    }

    /// True for an adapter to another database system: its time is spent in another
    /// program (or library), which oltpscope's simulator and profiler do not attribute.
    pub fn is_external(self) -> bool {
        self.descriptor().external.is_some()
    }

    /// The engine `dir` holds a database of (told by the engines' own files), if any.
    pub fn owning(st: &dyn storage::Storage, dir: &std::path::Path) -> Option<EngineName> {
        Self::ALL
            .iter()
            .copied()
            .find(|e| (e.descriptor().owns_dir)(st, dir))
    }
}

impl clap::ValueEnum for EngineName {
    fn value_variants<'a>() -> &'a [Self] {
        Self::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let d = self.descriptor();
        Some(clap::builder::PossibleValue::new(d.name).help(d.about))
    }
}
