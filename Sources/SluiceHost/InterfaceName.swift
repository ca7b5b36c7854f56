/// Linux interface-name rules, checked before a name reaches the kernel so the error can say what
/// is wrong instead of a bare `EINVAL` (the kernel's `dev_valid_name`).
enum InterfaceName {
    /// Longest name the kernel accepts, in bytes: `IFNAMSIZ` (16) minus the terminating NUL.
    static let maxLength = 15

    /// Throws `HostError.invalidInterfaceName` unless `name` is a name the kernel will take.
    /// A `%d` pattern (`sluice%d`) is allowed; the kernel replaces it with a free number.
    static func validate(_ name: String) throws(HostError) {
        let bytes = Array(name.utf8)
        func fail(_ reason: String) -> HostError { .invalidInterfaceName(name: name, reason: reason) }
        if bytes.isEmpty { throw fail("the name is empty") }
        if bytes.count > maxLength {
            throw fail("\(bytes.count) bytes is longer than the kernel's limit of \(maxLength)")
        }
        if name == "." || name == ".." { throw fail("\".\" and \"..\" are reserved") }
        if let bad = bytes.first(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: ":") || $0 <= 0x20 || $0 == 0x7F }) {
            let shown = bad == 0 ? "NUL" : bad <= 0x20 || bad == 0x7F ? "whitespace or a control character" : "\"\(Character(Unicode.Scalar(bad)))\""
            throw fail("it contains \(shown), which the kernel does not allow")
        }
    }
}
