import Glibc
import SluiceSystem

/// A connection to the D-Bus system bus through libsystemd's sd-bus (`SystemdLibrary`, open for as
/// long as the connection is): method calls built from `DBusCall` values, answered or failed within a timeout.
/// The bus address is sd-bus's: `$DBUS_SYSTEM_BUS_ADDRESS`, else `/run/dbus/system_bus_socket`.
///
/// Thread rule: one thread (control path); sd-bus connections are not thread-safe.
final class SystemBus {
    /// How long a call may wait for its answer.
    static let callTimeoutMicroseconds: UInt64 = 5_000_000
    static let socketPath = "/run/dbus/system_bus_socket"

    private let library: SystemdLibrary
    private let bus: SystemdLibrary.Bus

    init() throws(HostError) {
        library = try SystemdLibrary()
        var bus: SystemdLibrary.Bus?
        let result = library.openSystem(&bus)
        guard result >= 0, let bus else {
            throw .dbus(operation: "connect to the system bus", name: nil,
                        message: "\(SystemError.describe(-result)) — is dbus-daemon running (\(Self.socketPath))?")
        }
        self.bus = bus
    }

    deinit {
        _ = library.flushCloseUnref(bus)  // before `library` (and with it the code) goes
    }

    /// Sends `call` and waits for its answer; `read` may take values out of the reply. Throws
    /// `HostError.dbus` with the D-Bus error's name and message when the callee refuses.
    @discardableResult
    func call<T>(_ call: DBusCall, read: (SystemBus, SystemdLibrary.Message) throws(HostError) -> T) throws(HostError) -> T {
        let operation = call.description
        var message: SystemdLibrary.Message?
        try check(library.newMethodCall(bus, &message, call.destination, call.path, call.interface, call.member), operation)
        guard let message else { throw .dbus(operation: operation, name: nil, message: "sd-bus made no message") }
        defer { _ = library.messageUnref(message) }
        for argument in call.arguments { try append(argument, to: message, operation) }

        var error = SystemdLibrary.BusError(name: nil, message: nil, need_free: 0)
        var reply: SystemdLibrary.Message?
        let result = library.call(bus, message, Self.callTimeoutMicroseconds, &error, &reply)
        defer {
            library.errorFree(&error)
            _ = library.messageUnref(reply)
        }
        guard result >= 0, let reply else {
            let name = error.name.map { String(cString: $0) }
            let text = error.message.map { String(cString: $0) } ?? SystemError.describe(-result)
            throw .dbus(operation: operation, name: name, message: text)
        }
        return try read(self, reply)
    }

    /// Sends `call` and ignores what the answer carries.
    func call(_ call: DBusCall) throws(HostError) {
        try self.call(call) { (_, _) throws(HostError) in () }
    }

    /// Whether some connection owns the bus name `name` (`org.freedesktop.DBus.NameHasOwner`),
    /// without starting the service that would own it.
    func nameHasOwner(_ name: String) throws(HostError) -> Bool {
        let query = DBusCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                             interface: "org.freedesktop.DBus", member: "NameHasOwner", arguments: [.string(name)])
        return try call(query) { (bus, reply) throws(HostError) in
            var owned: Int32 = 0
            try bus.check(bus.library.readBasic(reply, CChar(UInt8(ascii: "b")), &owned), "read the answer of \(query)")
            return owned != 0
        }
    }

    // MARK: marshalling

    private func append(_ value: DBusValue, to message: SystemdLibrary.Message, _ operation: String) throws(HostError) {
        switch value {
        case .int32(let v):
            var v = v
            try check(library.appendBasic(message, type("i"), &v), operation)
        case .boolean(let b):
            var v: Int32 = b ? 1 : 0  // sd-bus reads a `b` from a C int
            try check(library.appendBasic(message, type("b"), &v), operation)
        case .string(let s):
            // For strings, sd-bus takes the characters themselves, not a pointer to a pointer.
            let result = s.withCString { library.appendBasic(message, type("s"), $0) }
            try check(result, operation)
        case .bytes(let bytes):
            let result = bytes.withUnsafeBytes { library.appendArray(message, type("y"), $0.baseAddress, $0.count) }
            try check(result, operation)
        case .array(let element, let items):
            try check(library.openContainer(message, type("a"), element), operation)
            for item in items { try append(item, to: message, operation) }
            try check(library.closeContainer(message), operation)
        case .structure(let fields):
            try check(library.openContainer(message, type("r"), String(value.signature.dropFirst().dropLast())), operation)
            for field in fields { try append(field, to: message, operation) }
            try check(library.closeContainer(message), operation)
        }
    }

    private func type(_ code: Unicode.Scalar) -> CChar { CChar(UInt8(ascii: code)) }

    /// sd-bus functions return a negative errno on failure.
    private func check(_ result: Int32, _ operation: String) throws(HostError) {
        guard result >= 0 else { throw .dbus(operation: operation, name: nil, message: SystemError.describe(-result)) }
    }
}
