import SluiceWire

/// `--upstream socks5://[USER:PASSWORD@]HOST:PORT`: a SOCKS5 server that `sluice up` sends its flows
/// to instead of a Sluice relay. HOST is an IP literal (IPv6 in brackets), as for `--relay`: names are
/// not resolved. USER and PASSWORD are percent-decoded (`%40` for `@`, `%3A` for `:`), 1 to 255
/// bytes each (RFC 1929).
public struct SocksUpstreamURL: Sendable, Equatable, CustomStringConvertible {
    public let endpoint: SocketEndpoint
    /// RFC 1929 username and password, both or neither.
    public let username: [UInt8]?
    public let password: [UInt8]?

    public init(endpoint: SocketEndpoint, username: [UInt8]? = nil, password: [UInt8]? = nil) {
        self.endpoint = endpoint
        self.username = username
        self.password = password
    }

    /// Why a text is not one, as the end of "… is not <expected>".
    public enum Problem: Error, Equatable {
        case scheme
        case endpoint
        case credentials

        var expected: String {
            switch self {
            case .scheme: return "a SOCKS5 URL: socks5://HOST:PORT or socks5://USER:PASSWORD@HOST:PORT"
            case .endpoint: return "a SOCKS5 URL with an IP address and port, such as socks5://10.0.0.1:1080 or socks5://[fd00::1]:1080 (host names are not resolved)"
            case .credentials: return "a SOCKS5 URL whose user and password are each 1 to 255 bytes, written USER:PASSWORD@ (percent-encode @ and : as %40 and %3A)"
            }
        }
    }

    public static func parse(_ text: String) throws(Problem) -> SocksUpstreamURL {
        let prefix = "socks5://"
        guard text.lowercased().hasPrefix(prefix) else { throw .scheme }
        var rest = Substring(text.dropFirst(prefix.count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        var username: [UInt8]?, password: [UInt8]?
        if let at = rest.lastIndex(of: "@") {
            let userinfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            guard let colon = userinfo.firstIndex(of: ":"),
                  let user = percentDecoded(userinfo[..<colon]), let pass = percentDecoded(userinfo[userinfo.index(after: colon)...]),
                  (1...255).contains(user.count), (1...255).contains(pass.count) else { throw .credentials }
            username = user
            password = pass
        }
        guard let endpoint = SocketEndpoint(String(rest)), endpoint.port != 0 else { throw .endpoint }
        return SocksUpstreamURL(endpoint: endpoint, username: username, password: password)
    }

    /// `%XX` decoded; nil for a `%` not followed by two hex digits.
    static func percentDecoded(_ text: Substring) -> [UInt8]? {
        var out: [UInt8] = []
        var bytes = Array(text.utf8)[...]
        while let byte = bytes.popFirst() {
            guard byte == UInt8(ascii: "%") else {
                out.append(byte)
                continue
            }
            guard bytes.count >= 2, let value = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16) else { return nil }
            out.append(value)
            bytes = bytes.dropFirst(2)
        }
        return out
    }

    /// `socks5://HOST:PORT`, with `USER@` when there is one; never the password.
    public var description: String {
        "socks5://" + (username.map { String(decoding: $0, as: UTF8.self) + "@" } ?? "") + "\(endpoint)"
    }
}

extension SocksUpstreamURL {
    /// `text` with whatever sits between `:` and `@` of its user part replaced by `***`, for error
    /// messages about a value that may hold a password.
    static func redacted(_ text: String) -> String {
        guard text.lowercased().hasPrefix("socks5://"), let at = text.lastIndex(of: "@") else { return text }
        let start = text.index(text.startIndex, offsetBy: 9)
        guard at > start else { return text }
        let userinfo = text[start..<at]
        guard let colon = userinfo.firstIndex(of: ":") else { return text }
        return String(text[..<text.index(after: colon)]) + "***" + String(text[at...])
    }
}
