import CSluiceHostShims
import Glibc
import SluiceSystem

/// A Linux TUN interface: layer-3 packets, no packet-information prefix (`IFF_TUN | IFF_NO_PI`),
/// optionally with a `virtio_net_hdr` in front of every packet (`IFF_VNET_HDR`).
///
/// The descriptor is non-blocking and close-on-exec; `read(into:)` and `write(_:)` report
/// `EAGAIN` as `.wouldBlock`, so the caller's event loop waits on `fd` for readiness.
/// The device lives as long as this object (unless it was made persistent elsewhere): `deinit`
/// closes the descriptor and the kernel deletes the interface with its addresses and routes.
///
/// Thread rule: reads and writes may come from different threads (the kernel serialises them);
/// the object itself is immutable.
public final class TunDevice: Sendable {
    /// How to open the device.
    public struct Options: Sendable, Equatable {
        /// Prefix each packet with a `struct virtio_net_hdr` (`IFF_VNET_HDR`), so the kernel can
        /// hand over and accept offloaded (GSO, checksum-partial) packets once offloads are set.
        public var vnetHeader: Bool
        /// Fail (`HostError.tunExists`) if an interface with this name exists already
        /// (`IFF_TUN_EXCL`), instead of attaching to a persistent device left behind.
        public var exclusive: Bool

        public init(vnetHeader: Bool = false, exclusive: Bool = false) {
            self.vnetHeader = vnetHeader
            self.exclusive = exclusive
        }
    }

    /// The open `/dev/net/tun` descriptor, for epoll.
    public let fd: Int32
    /// The interface name the kernel gave (the requested one, or `tun0`-style if none was asked for
    /// or the request held a `%d` pattern).
    public let name: String
    /// The options the device was opened with.
    public let options: Options

    /// Opens `/dev/net/tun` and creates (or attaches to) the interface `name`; `nil` lets the kernel
    /// pick a `tunN` name. Without the vnet header, offloads are cleared (`TUNSETOFFLOAD 0`), since
    /// a persistent device keeps the offload flags of its previous user.
    public init(name requested: String? = nil, options: Options = Options()) throws(HostError) {
        let shown = requested ?? "(kernel-chosen name)"
        if let requested { try InterfaceName.validate(requested) }

        let fd: Int32
        do {
            fd = try syscall("open") { open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC) }
        } catch {
            throw .tunOpen(device: shown, errno: error.code)
        }

        var flags = IFF_TUN | IFF_NO_PI
        if options.vnetHeader { flags |= IFF_VNET_HDR }
        if options.exclusive { flags |= IFF_TUN_EXCL }
        var actual = [CChar](repeating: 0, count: Int(IF_NAMESIZE))
        do {
            _ = try syscall("TUNSETIFF") { sluice_tun_attach(fd, requested, Int32(flags), &actual) }
        } catch {
            Glibc.close(fd)
            if error.code == EBUSY, options.exclusive, let requested, if_nametoindex(requested) != 0 {
                throw .tunExists(device: requested)
            }
            throw .tunAttach(device: shown, errno: error.code)
        }
        let name = String(decoding: actual.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)

        if !options.vnetHeader {
            do {
                _ = try syscall("TUNSETOFFLOAD") { sluice_tun_set_offload(fd, 0) }
            } catch {
                Glibc.close(fd)
                throw .tunControl(device: name, operation: "clear offloads (TUNSETOFFLOAD 0)", errno: error.code)
            }
        }
        self.fd = fd
        self.name = name
        self.options = options
    }

    deinit {
        Glibc.close(fd)
    }

    /// Reads one packet into `buffer` (with its vnet header, when opened with one). A packet longer
    /// than the buffer is truncated by the kernel, so size the buffer for the MTU plus headers.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(HostError) -> IOResult<Int> {
        do {
            return try syscallRetrying("read") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
        } catch {
            throw .tunIO(device: name, operation: "read", errno: error.code)
        }
    }

    /// Writes one whole packet (with its vnet header, when opened with one).
    public func write(_ packet: UnsafeRawBufferPointer) throws(HostError) -> IOResult<Int> {
        do {
            return try syscallRetrying("write") { Glibc.write(fd, packet.baseAddress, packet.count) }
        } catch {
            throw .tunIO(device: name, operation: "write", errno: error.code)
        }
    }

    /// Writes one packet from `count` pieces (`writev`): one packet, as one `write` of their bytes.
    public func write(gathering pieces: UnsafePointer<iovec>, count: Int) throws(HostError) -> IOResult<Int> {
        do {
            return try syscallRetrying("writev") { Glibc.writev(fd, pieces, Int32(count)) }
        } catch {
            throw .tunIO(device: name, operation: "writev", errno: error.code)
        }
    }

    /// Sets the offloads the kernel may use towards us (`TUNSETOFFLOAD`, `TUN_F_*` bits such as
    /// `TUN_F_CSUM | TUN_F_TSO4`). Only meaningful with `Options.vnetHeader`.
    public func setOffloads(_ flags: UInt32) throws(HostError) {
        do {
            _ = try syscall("TUNSETOFFLOAD") { sluice_tun_set_offload(fd, flags) }
        } catch {
            throw .tunControl(device: name, operation: "set offloads 0x\(String(flags, radix: 16)) (TUNSETOFFLOAD)", errno: error.code)
        }
    }

    /// Keeps the interface after the descriptor closes (`TUNSETPERSIST 1`), or ends that (`0`).
    /// A persistent device must be removed with `NetlinkSocket.deleteLink(named:)`.
    public func setPersistent(_ persistent: Bool) throws(HostError) {
        do {
            _ = try syscall("TUNSETPERSIST") { sluice_tun_set_persist(fd, persistent ? 1 : 0) }
        } catch {
            throw .tunControl(device: name, operation: "TUNSETPERSIST \(persistent ? 1 : 0)", errno: error.code)
        }
    }
}
