/// A value of the few D-Bus types Sluice sends (D-Bus specification, "Type System"), so a method
/// call's arguments can be built, compared and tested as plain data before `SystemBus` marshals them.
public enum DBusValue: Hashable, Sendable {
    /// `i`
    case int32(Int32)
    /// `b`
    case boolean(Bool)
    /// `s`
    case string(String)
    /// `ay`
    case bytes([UInt8])
    /// `a` of elements whose signature is `element` (given, so an empty array has a type too).
    case array(element: String, [DBusValue])
    /// `(…)`
    case structure([DBusValue])

    /// The value's type signature: `i`, `ay`, `a(iay)`...
    public var signature: String {
        switch self {
        case .int32: return "i"
        case .boolean: return "b"
        case .string: return "s"
        case .bytes: return "ay"
        case .array(let element, _): return "a" + element
        case .structure(let fields): return "(" + fields.map(\.signature).joined() + ")"
        }
    }
}

/// One D-Bus method call: who gets it and with what arguments.
public struct DBusCall: Hashable, Sendable, CustomStringConvertible {
    public var destination: String
    public var path: String
    public var interface: String
    public var member: String
    public var arguments: [DBusValue]

    public init(destination: String, path: String, interface: String, member: String, arguments: [DBusValue]) {
        self.destination = destination
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }

    /// `org.freedesktop.resolve1.Manager.SetLinkDNS(a(iay))`-style text for logs and errors.
    public var description: String {
        "\(interface).\(member)(\(arguments.map(\.signature).joined()))"
    }
}
