import CSluiceHostShims
import Glibc

/// The part of libsystemd's sd-bus API (`libsystemd.so.0`, Debian package libsystemd0) that
/// `SystemBus` uses, opened with `dlopen` for as long as one `SystemBus` lives, instead of linked.
///
/// Why: libsystemd and what it pulls in (libgcrypt, libgpg-error, liblzma, libzstd, liblz4, libcap)
/// would otherwise stay mapped into the process for its whole life, and resident (README, "Memory"),
/// although a client talks to systemd-resolved only while it comes up and goes down; linked, they
/// would be in every Sluice process, the relay included (`make build` refuses a binary that loads
/// libsystemd at start: UNWANTED_LIBS in the Makefile). Each `SystemdLibrary` holds one `dlopen`
/// reference and gives it back in `deinit`; when the last goes, the dynamic loader unmaps the
/// libraries (libsystemd's fork handlers, registered with `__register_atfork`, are unregistered by
/// glibc's `dlclose` with them). The signatures are those of `<systemd/sd-bus.h>` (Debian
/// libsystemd-dev), whose ABI the soname `.0` fixes; only functions with fixed argument lists are
/// used, because Swift cannot call C variadics through a pointer (`sd_bus_message_append`'s
/// format-string form is replaced by `append_basic`, `append_array` and the container calls).
final class SystemdLibrary {
    static let soname = "libsystemd.so.0"

    /// `sd_bus_error` (declared in CSluiceShims/include/sluice_sdbus.h): a D-Bus error's name and
    /// message; zeroed it is `SD_BUS_ERROR_NULL`; released with `errorFree`.
    typealias BusError = sluice_sd_bus_error

    typealias Bus = OpaquePointer
    typealias Message = OpaquePointer

    let openSystem: @convention(c) (UnsafeMutablePointer<Bus?>) -> Int32
    let flushCloseUnref: @convention(c) (Bus?) -> Bus?
    let newMethodCall: @convention(c) (Bus, UnsafeMutablePointer<Message?>, UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafePointer<CChar>) -> Int32
    let messageUnref: @convention(c) (Message?) -> Message?
    let appendBasic: @convention(c) (Message, CChar, UnsafeRawPointer) -> Int32
    let appendArray: @convention(c) (Message, CChar, UnsafeRawPointer?, Int) -> Int32
    let openContainer: @convention(c) (Message, CChar, UnsafePointer<CChar>) -> Int32
    let closeContainer: @convention(c) (Message) -> Int32
    let call: @convention(c) (Bus, Message, UInt64, UnsafeMutablePointer<BusError>, UnsafeMutablePointer<Message?>) -> Int32
    let readBasic: @convention(c) (Message, CChar, UnsafeMutableRawPointer) -> Int32
    let errorFree: @convention(c) (UnsafeMutablePointer<BusError>) -> Void

    private let handle: UnsafeMutableRawPointer

    /// Opens the library (another reference, if it is open already) and finds the functions.
    init() throws(HostError) {
        guard let handle = dlopen(Self.soname, RTLD_NOW | RTLD_LOCAL) else {
            throw .dbus(operation: "load \(Self.soname)", name: nil,
                        message: "\(Self.lastError()) — install libsystemd0, or use --resolver file")
        }
        func symbol<T>(_ name: String, as type: T.Type) throws(HostError) -> T {
            guard let address = dlsym(handle, name) else {
                let error = Self.lastError()
                dlclose(handle)
                throw .dbus(operation: "load \(Self.soname)", name: nil, message: "\(error) — this libsystemd is too old (sd-bus needs systemd 221 or later)")
            }
            return unsafeBitCast(address, to: type)
        }
        openSystem = try symbol("sd_bus_open_system", as: (@convention(c) (UnsafeMutablePointer<Bus?>) -> Int32).self)
        flushCloseUnref = try symbol("sd_bus_flush_close_unref", as: (@convention(c) (Bus?) -> Bus?).self)
        newMethodCall = try symbol("sd_bus_message_new_method_call", as: (@convention(c) (Bus, UnsafeMutablePointer<Message?>, UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafePointer<CChar>) -> Int32).self)
        messageUnref = try symbol("sd_bus_message_unref", as: (@convention(c) (Message?) -> Message?).self)
        appendBasic = try symbol("sd_bus_message_append_basic", as: (@convention(c) (Message, CChar, UnsafeRawPointer) -> Int32).self)
        appendArray = try symbol("sd_bus_message_append_array", as: (@convention(c) (Message, CChar, UnsafeRawPointer?, Int) -> Int32).self)
        openContainer = try symbol("sd_bus_message_open_container", as: (@convention(c) (Message, CChar, UnsafePointer<CChar>) -> Int32).self)
        closeContainer = try symbol("sd_bus_message_close_container", as: (@convention(c) (Message) -> Int32).self)
        call = try symbol("sd_bus_call", as: (@convention(c) (Bus, Message, UInt64, UnsafeMutablePointer<BusError>, UnsafeMutablePointer<Message?>) -> Int32).self)
        readBasic = try symbol("sd_bus_message_read_basic", as: (@convention(c) (Message, CChar, UnsafeMutableRawPointer) -> Int32).self)
        errorFree = try symbol("sd_bus_error_free", as: (@convention(c) (UnsafeMutablePointer<BusError>) -> Void).self)
        self.handle = handle
    }

    deinit {
        dlclose(handle)
    }

    private static func lastError() -> String {
        dlerror().map { String(cString: $0) } ?? "unknown dlopen error"
    }
}
