/// The head of an HTTP/1.x request to a proxy (RFC 9112 §3, RFC 9110 §9.3.6), without I/O: the
/// request line and header fields up to the empty line. Enough for a forward proxy: CONNECT's
/// authority-form target, a plain request's absolute-form URL (`GET http://host/path HTTP/1.1`,
/// what `http_proxy=` makes curl, apt and wget send), and `Proxy-Authorization`.
///
/// Strict where a proxy must be (one space between the three parts, a version `HTTP/1.0` or
/// `HTTP/1.1`, field names without whitespace before the colon, no obsolete line folding) and
/// bounded (`maximumLength`); header values are kept as bytes decoded as Latin-1-safe UTF-8.
public struct HTTPRequestHead: Equatable, Sendable {
    /// A head longer than this is refused (431): real ones are a few hundred bytes.
    public static let maximumLength = 16 * 1024

    public var method: String
    public var target: String
    public var version: String
    /// Header fields in order, names as sent.
    public var fields: [(name: String, value: String)]

    public static func == (a: HTTPRequestHead, b: HTTPRequestHead) -> Bool {
        a.method == b.method && a.target == b.target && a.version == b.version
            && a.fields.map(\.name) == b.fields.map(\.name) && a.fields.map(\.value) == b.fields.map(\.value)
    }

    /// Why a head does not parse; each maps to the status a proxy answers with.
    public enum Problem: Error, Equatable, Sendable {
        case tooLong
        case badRequestLine
        case badVersion
        case badField

        /// 431 for a head too long, 505 for an unknown version, else 400.
        public var status: Int {
            switch self {
            case .tooLong: return 431
            case .badVersion: return 505
            case .badRequestLine, .badField: return 400
            }
        }
    }

    /// The head at the start of `bytes` and its length (the body or the tunnel's bytes follow), or
    /// nil while the empty line has not arrived.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(Problem) -> (head: HTTPRequestHead, length: Int)? {
        guard let end = headEnd(bytes) else {
            if bytes.count > maximumLength { throw .tooLong }
            return nil
        }
        guard end <= maximumLength else { throw .tooLong }
        var lines = splitLines(UnsafeRawBufferPointer(rebasing: bytes[0..<end - 4]))
        guard !lines.isEmpty else { throw .badRequestLine }
        let requestLine = lines.removeFirst()
        let parts = requestLine.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty,
              parts[0].allSatisfy({ $0.isASCII && ($0.isLetter || $0 == "-") }) else { throw .badRequestLine }
        guard parts[2] == "HTTP/1.1" || parts[2] == "HTTP/1.0" else {
            throw parts[2].hasPrefix("HTTP/") ? .badVersion : .badRequestLine
        }
        var fields: [(String, String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex,
                  !line[..<colon].contains(where: { $0 == " " || $0 == "\t" }),
                  !(line.first == " " || line.first == "\t") else { throw .badField }
            let value = line[line.index(after: colon)...].trimmingSpaces
            fields.append((String(line[..<colon]), value))
        }
        return (HTTPRequestHead(method: String(parts[0]), target: String(parts[1]), version: String(parts[2]), fields: fields), end)
    }

    /// The first value of a field, by case-insensitive name.
    public func value(of name: String) -> String? {
        let lower = name.lowercased()
        return fields.first { $0.name.lowercased() == lower }?.value
    }

    /// Offset just past `\r\n\r\n`, if present.
    private static func headEnd(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i + 4
        }
        return nil
    }

    private static func splitLines(_ bytes: UnsafeRawBufferPointer) -> [String] {
        String(decoding: bytes, as: UTF8.self).components(separatedByCRLF: ())
    }
}

extension String {
    fileprivate func components(separatedByCRLF: ()) -> [String] {
        var out: [String] = []
        var current = ""
        var pendingCR = false
        for scalar in unicodeScalars {
            if pendingCR {
                pendingCR = false
                if scalar == "\n" {
                    out.append(current)
                    current = ""
                    continue
                }
                current.unicodeScalars.append("\r")
            }
            if scalar == "\r" { pendingCR = true } else { current.unicodeScalars.append(scalar) }
        }
        if pendingCR { current.unicodeScalars.append("\r") }
        out.append(current)
        return out
    }
}

extension Substring {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
