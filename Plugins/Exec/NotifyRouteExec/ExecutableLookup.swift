import Glibc

/// Finds a plugin program: an absolute path as given, a bare name in `PATH`
/// (the way `execvp` does). Relative paths such as `./plugin` are refused by the
/// plugin's options, since they would depend on the caller's working directory.
public enum ExecutableLookup {
    /// The executable regular file for `name`, or `nil`.
    public static func find(_ name: String, path: String?) -> String? {
        if name.hasPrefix("/") { return isExecutableFile(name) ? name : nil }
        guard !name.isEmpty, !name.contains("/") else { return nil }
        for directory in (path ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") where directory.hasPrefix("/") {
            let candidate = "\(directory)/\(name)"
            if isExecutableFile(candidate) { return candidate }
        }
        return nil
    }

    public static func isExecutableFile(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG && access(path, X_OK) == 0
    }
}
