//! `oltpscope`: the binary. The command line is the `oltpscope` library (`lib.rs`).

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    oltpscope::main();
}
