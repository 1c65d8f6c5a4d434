import Glibc
import NotifyRoute
import NotifyRouteExec

/// A config that runs external programs must be as trustworthy as a script: whoever can
/// write it, or the program it names, can make the router run code of their choice. Such a
/// config is refused (exit 78), with the reason, unless
/// - the config file is owned by the user or root and writable by neither group nor
///   others, and so is every directory above it, where it really is (a symbolic link is
///   followed) and where it was named (the link could be swapped), up to `/`; a sticky
///   directory such as /tmp may be writable by others, since no one can rename or remove
///   what is yours there;
/// - the program is held to the same rules, except that no directory above it may be
///   writable by others, sticky or not: a program is run, not read, and a directory
///   such as /tmp is where anyone could have put one first. A bare name is checked in
///   every `PATH` directory the lookup goes through: one others can write that comes
///   before the program's could take its place later.
enum ConfigTrust {
    static func check(path: String, externalSink: SinkDeclaration, program: String) throws(ConfigError) {
        let location = externalSink.location ?? SourceLocation(file: path, line: 1, column: 1)
        let why = "sink \"\(externalSink.name)\" runs an external program (\(program))"
        let refuse = { (reason: String) in ConfigError("refusing it: \(why), and \(reason)", at: location) }
        do {
            try checkFile(path, what: "the config \(path)", stickyDirectories: true)
        } catch {
            throw refuse(error.reason)
        }
        let searchPath = externalSink.kind == ExecSink.plugin.kind
            ? (try? externalSink.options.stringMap("env"))??["PATH"] ?? ProcessEnvironment.value("PATH")
            : ProcessEnvironment.value("PATH")
        do {
            try checkProgram(program, searchPath: searchPath)
        } catch {
            throw refuse(error.reason)
        }
    }

    struct Untrusted: Error {
        var reason: String
    }

    /// The program as ``ExecutableLookup`` would find it, and every `PATH` directory tried on the way.
    static func checkProgram(_ program: String, searchPath: String?) throws(Untrusted) {
        if program.hasPrefix("/") {
            if ExecutableLookup.isExecutableFile(program) { try checkFile(program, what: "the program \(program)", stickyDirectories: false) }
            return
        }
        for directory in (searchPath ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") where directory.hasPrefix("/") {
            let directory = String(directory)
            try checkDirectoryChain(of: directory + "/", below: "the PATH entry \(directory) where \(program) is looked up", stickyAllowed: false)
            let candidate = directory + "/" + program
            if ExecutableLookup.isExecutableFile(candidate) {
                try checkFile(candidate, what: "the program \(candidate) (found on PATH)", stickyDirectories: false)
                return
            }
        }
    }

    /// `path` itself (owner, mode) and the directories above it, as named and as resolved.
    static func checkFile(_ path: String, what: String, stickyDirectories: Bool) throws(Untrusted) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw Untrusted(reason: "\(what) cannot be checked: \(String(cString: strerror(errno)))")
        }
        let me = getuid()
        if info.st_uid != me && info.st_uid != 0 {
            throw Untrusted(reason: "\(what) is owned by uid \(info.st_uid), neither you (uid \(me)) nor root")
        }
        if info.st_mode & (S_IWGRP | S_IWOTH) != 0 {
            throw Untrusted(reason: "\(what) is writable by \(writers(info.st_mode)) (mode \(octal(info.st_mode))); run: chmod go-w \(path)")
        }
        let named = absolute(path)
        var chains = [named]
        if let resolved = realpath(path, nil) {
            let real = String(cString: resolved)
            free(resolved)
            if real != named { chains.append(real) }
        }
        for chain in chains { try checkDirectoryChain(of: chain, below: what, stickyAllowed: stickyDirectories) }
    }

    /// Every directory above `path` (an absolute path), nearest first, up to `/`. One that
    /// does not exist (a `PATH` entry) is skipped: whoever could create it must be able to
    /// write the one above, which is checked next.
    static func checkDirectoryChain(of path: String, below what: String, stickyAllowed: Bool) throws(Untrusted) {
        let me = getuid()
        for directory in ancestors(of: path) {
            var folder = stat()
            guard stat(directory, &folder) == 0 else {
                if errno == ENOENT || errno == ENOTDIR { continue }
                throw Untrusted(reason: "the directory \(directory) above \(what) cannot be checked: \(String(cString: strerror(errno)))")
            }
            let sticky = folder.st_mode & S_ISVTX != 0
            if folder.st_mode & (S_IWGRP | S_IWOTH) != 0 && !(sticky && stickyAllowed) {
                let mode = "mode \(octal(folder.st_mode))\(sticky ? ", sticky" : "")"
                let consequence = sticky
                    ? ": anyone could have put a program there first; keep it in a directory only you or root can write"
                    : ", so the file could be replaced; run: chmod go-w \(directory)"
                throw Untrusted(reason: "the directory \(directory) above \(what) is writable by \(writers(folder.st_mode)) (\(mode))\(consequence)")
            }
            if folder.st_uid != me && folder.st_uid != 0 {
                throw Untrusted(reason: "the directory \(directory) above \(what) is owned by uid \(folder.st_uid), neither you (uid \(me)) nor root")
            }
        }
    }

    /// `/a/b/c` → `/a/b`, `/a`, `/`.
    static func ancestors(of path: String) -> [String] {
        var result: [String] = []
        var rest = Substring(path)
        while let slash = rest.lastIndex(of: "/") {
            rest = rest[..<slash]
            result.append(rest.isEmpty ? "/" : String(rest))
            if rest.isEmpty { break }
        }
        return result
    }

    private static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        guard let cwd = getcwd(nil, 0) else { return "/" + path }
        defer { free(cwd) }
        let base = String(cString: cwd)
        return (base == "/" ? "" : base) + "/" + path
    }

    private static func writers(_ mode: mode_t) -> String {
        switch (mode & S_IWGRP != 0, mode & S_IWOTH != 0) {
        case (true, true): "group and others"
        case (true, false): "its group"
        default: "others"
        }
    }

    private static func octal(_ mode: mode_t) -> String {
        "0" + String(mode & 0o7777, radix: 8)
    }
}
