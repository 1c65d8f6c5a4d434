import CMallocTuning

/// How a long-running daemon asks glibc's malloc to hand memory back.
package enum DaemonMemory {
    /// Blocks of 128 KB and more mapped on their own and unmapped when freed, always: by
    /// default glibc raises that threshold to the size of each mapped block freed, after
    /// which the history fold's large buffers came from the threads' arenas, which kept
    /// them, and the daemon grew with its uptime (Tests/Benchmarks/README.md, "Why the code is so").
    package static func returnLargeBlocks() {
        _ = notify_route_fix_mmap_threshold(128 << 10)
    }
}
