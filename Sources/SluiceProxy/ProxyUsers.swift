import SluiceBase64

/// Who may use the proxy (`--auth-file`): usernames and passwords, checked for SOCKS5 (RFC 1929)
/// and for HTTP (`Proxy-Authorization: Basic`). Without users, anyone who reaches the listening
/// address may, which is why a non-loopback `--listen` requires them.
public struct ProxyUsers: Sendable, Equatable {
    private let passwords: [[UInt8]: [UInt8]]

    /// `user:password` pairs; the password may contain colons, the user may not.
    public init(_ pairs: [(user: [UInt8], password: [UInt8])]) {
        var table: [[UInt8]: [UInt8]] = [:]
        for (user, password) in pairs { table[user] = password }
        passwords = table
    }

    public var isEmpty: Bool { passwords.isEmpty }

    /// Whether `user` has `password`, compared in time independent of where they differ.
    public func accepts(user: [UInt8], password: [UInt8]) -> Bool {
        guard let known = passwords[user] else { return false }
        var difference = UInt8(known.count == password.count ? 0 : 1)
        for i in 0..<max(known.count, password.count) {
            difference |= (i < known.count ? known[i] : 0) ^ (i < password.count ? password[i] : 0)
        }
        return difference == 0
    }

    /// `Proxy-Authorization: Basic <base64 of user:password>` (RFC 7617), checked.
    public func accepts(proxyAuthorization value: String?) -> Bool {
        guard let value else { return false }
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "basic",
              let decoded = try? Base64.decode(String(parts[1]).trimmingSpaces()),
              let colon = decoded.firstIndex(of: UInt8(ascii: ":")) else { return false }
        return accepts(user: Array(decoded[..<colon]), password: Array(decoded[(colon + 1)...]))
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
