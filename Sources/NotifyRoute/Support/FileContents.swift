import Glibc

/// Reading an open file to its end, up to a cap: the loop the config and the state file of
/// earlier versions share.
package enum FileContents {
    /// A `read` failed; `errno` says why.
    package struct ReadFailure: Error, Sendable {
        package var errno: Int32
    }

    /// The bytes from `fd`'s offset to its end, read straight into one buffer sized from
    /// `expectedSize` (a `stat` size; `/proc` files say 0 and are read all the same) and
    /// grown as needed. Reads interrupted by a signal are retried. Reading stops once more
    /// than `limit` bytes are in, so a result longer than `limit` means a larger file: the
    /// caller says it was too long. There is no default: every caller names its cap.
    package static func read(_ fd: Int32, limit: Int, expectedSize: Int = 0) -> Result<[UInt8], ReadFailure> {
        // Not a buffer of the limit: zeroing 1 MiB costs more than parsing a config.
        var bytes = [UInt8](repeating: 0, count: min(max(expectedSize, 4096), limit) + 1)
        var count = 0
        while count <= limit {
            if count == bytes.count { bytes += repeatElement(0, count: min(bytes.count, limit + 1 - bytes.count)) }
            let got = bytes.withUnsafeMutableBytes { buffer in
                Glibc.read(fd, buffer.baseAddress! + count, buffer.count - count)
            }
            if got == 0 { break }
            if got < 0 {
                if errno == EINTR { continue }
                return .failure(ReadFailure(errno: errno))
            }
            count += got
        }
        bytes.removeSubrange(count...)
        return .success(bytes)
    }
}
