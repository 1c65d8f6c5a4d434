import CMallocTuning

/// How a long-running daemon asks glibc's malloc to hand memory back.
package enum DaemonMemory {
    /// Blocks of 128 KB and more mapped on their own and unmapped when freed, always: by
    /// default glibc raises that threshold to the size of each mapped block freed, after
    /// which the history fold's large buffers came from the threads' arenas, which kept
    /// them. `notify-route-bench serve` grew from 25.7 MB after 500k events to 30.2 MB after
    /// 6M with the default, and from 21.7 to 22.6 MB with this, at the same throughput
    /// (Tests/Benchmarks/README.md, twelfth pass).
    package static func returnLargeBlocks() {
        _ = notify_route_fix_mmap_threshold(128 << 10)
    }
}
