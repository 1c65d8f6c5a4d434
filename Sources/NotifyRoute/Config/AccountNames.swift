import Glibc

/// User and group names of `serve.allow`, resolved to ids when the config loads, so that
/// a name that does not exist is a config error with its location, not a silent refusal.
enum AccountNames {
    static func ids(_ node: ConfigNode, _ what: String, user: Bool) throws(ConfigError) -> [UInt32] {
        let items: [ConfigNode]
        switch node.value {
        case .sequence(let list): items = list
        case .scalar: items = [node]
        default: throw ConfigError("\(what): expected a list of \(user ? "user" : "group") names or ids, found \(node.kindDescription)", at: node.location)
        }
        var ids: [UInt32] = []
        for item in items {
            let text = try item.scalarString("\(what) item")
            if let id = UInt32(text) {
                ids.append(id)
            } else if let id = user ? uid(named: text) : gid(named: text) {
                ids.append(id)
            } else {
                throw ConfigError("\(what): no \(user ? "user" : "group") \"\(text)\" on this system", at: item.location)
            }
        }
        return ids
    }

    private static func uid(named name: String) -> UInt32? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getpwnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return entry.pw_uid
    }

    private static func gid(named name: String) -> UInt32? {
        var entry = group()
        var result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getgrnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return entry.gr_gid
    }
}
