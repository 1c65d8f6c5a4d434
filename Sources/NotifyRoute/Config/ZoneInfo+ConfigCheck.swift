import Glibc
import TimeZoneInfo

extension ZoneInfo {
    /// What a config's `timezone:` gets told when `name` does not load, `nil` when it does:
    /// `unknown time zone "Europe/Berln"; did you mean "Europe/Berlin"? expected an IANA name such as Europe/Paris or UTC`.
    static func configProblem(_ name: String) -> String? {
        let error: ZoneInfoError
        do {
            _ = try named(name)
            return nil
        } catch let caught {
            error = caught
        }
        switch error.reason {
        case .invalidName, .notFound:
            let directory = directory
            let names = knownNames(in: directory)
            var message = "unknown time zone \"\(name)\""
            message += Suggestions.didYouMean(name, among: names + builtInNames).map { "; \($0) " } ?? "; "
            message += "expected an IANA name such as Europe/Paris or UTC"
            if names.isEmpty { message += " (no time zone data in \(directory): is tzdata installed?)" }
            return message
        case .unreadable, .malformed:
            return error.description
        }
    }

    /// The zone names under `directory` (`Europe/Berlin`, `UTC`, ...): files and folders
    /// whose names start with a capital letter, which leaves out `posix/`, `right/`,
    /// `zone.tab` and the like. Only read to suggest a name after a typo.
    static func knownNames(in directory: String) -> [String] {
        var names: [String] = []
        func walk(_ path: String, prefix: String, depth: Int) {
            guard depth < 4, let stream = opendir(path) else { return }
            defer { closedir(stream) }
            while let entry = readdir(stream) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                guard let first = name.utf8.first, first >= UInt8(ascii: "A"), first <= UInt8(ascii: "Z") else { continue }
                let full = path + "/" + name
                var info = stat()
                guard stat(full, &info) == 0 else { continue }
                if info.st_mode & S_IFMT == S_IFDIR {
                    walk(full, prefix: prefix + name + "/", depth: depth + 1)
                } else if info.st_mode & S_IFMT == S_IFREG {
                    names.append(prefix + name)
                }
            }
        }
        walk(directory, prefix: "", depth: 0)
        return names.sorted()
    }
}
