import Glibc
import NotifyRoute

/// A config that runs external programs must be as trustworthy as a script: whoever can
/// write it can make the router run a program of their choice. Such a config is refused
/// (exit 78) unless the file is owned by the user or root and writable by neither group
/// nor others, and its directory cannot be written by others either (unless sticky, as /tmp).
enum ConfigTrust {
    static func check(path: String, externalSink: SinkDeclaration, program: String) throws(ConfigError) {
        let location = externalSink.location ?? SourceLocation(file: path, line: 1, column: 1)
        let why = "sink \"\(externalSink.name)\" runs an external program (\(program))"
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw ConfigError("\(why), but the config file cannot be checked: \(String(cString: strerror(errno)))", at: location)
        }
        let me = getuid()
        if info.st_uid != me && info.st_uid != 0 {
            throw ConfigError("refusing it: \(why), and \(path) is owned by uid \(info.st_uid), neither you (uid \(me)) nor root", at: location)
        }
        if info.st_mode & (S_IWGRP | S_IWOTH) != 0 {
            throw ConfigError(
                "refusing it: \(why), and \(path) is writable by \(writers(info.st_mode)) (mode \(octal(info.st_mode))); run: chmod go-w \(path)",
                at: location)
        }
        let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        var folder = stat()
        if stat(directory.isEmpty ? "/" : directory, &folder) == 0 {
            let sticky = folder.st_mode & S_ISVTX != 0
            if folder.st_mode & (S_IWGRP | S_IWOTH) != 0 && !sticky {
                throw ConfigError(
                    "refusing it: \(why), and its directory \(directory) is writable by \(writers(folder.st_mode)) (mode \(octal(folder.st_mode))), so the file could be replaced; run: chmod go-w \(directory)",
                    at: location)
            }
            if folder.st_uid != me && folder.st_uid != 0 {
                throw ConfigError("refusing it: \(why), and its directory \(directory) is owned by uid \(folder.st_uid), neither you nor root", at: location)
            }
        }
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
