import Glibc
import SluiceSystem
import XCTest

@testable import SluiceHost

/// Error sentences: each names the operation, the device and the errno, and says what to do.
/// Needs no privileges.
final class HostErrorTests: XCTestCase {
    func testSentences() {
        let cases: [(HostError, String)] = [
            (.tunOpen(device: "sluice0", errno: ENOENT),
             "open(/dev/net/tun) for device sluice0: No such file or directory (ENOENT) — no /dev/net/tun: load the tun module (modprobe tun)"),
            (.tunOpen(device: "sluice0", errno: EACCES),
             "open(/dev/net/tun) for device sluice0: Permission denied (EACCES) — run as root, or grant CAP_NET_ADMIN and read-write access to /dev/net/tun"),
            (.tunAttach(device: "sluice0", errno: EPERM),
             "create TUN device sluice0 (TUNSETIFF): Operation not permitted (EPERM) — run as root or grant CAP_NET_ADMIN"),
            (.tunAttach(device: "sluice0", errno: EBUSY),
             "create TUN device sluice0 (TUNSETIFF): Device or resource busy (EBUSY) — device sluice0 is in use by another process"),
            (.tunIO(device: "sluice0", operation: "write", errno: EIO),
             "write on TUN device sluice0: Input/output error (EIO) — the device is down or was deleted"),
            (.netlinkRequest(operation: "add route 10.20.0.0/24 dev sluice0 table 21324", errno: EEXIST, kernelMessage: nil),
             "add route 10.20.0.0/24 dev sluice0 table 21324: File exists (EEXIST)"),
            (.netlinkRequest(operation: "add route 10.20.0.0/24 dev sluice0 table 21324", errno: ENETDOWN, kernelMessage: "Nexthop device is not up"),
             "add route 10.20.0.0/24 dev sluice0 table 21324: Network is down (ENETDOWN) — the kernel says: Nexthop device is not up"),
            (.netlinkRequest(operation: "set link sluice0 up", errno: EPERM, kernelMessage: nil),
             "set link sluice0 up: Operation not permitted (EPERM) — run as root or grant CAP_NET_ADMIN"),
            (.netlinkSocket(operation: "bind", errno: EMFILE),
             "bind (NETLINK_ROUTE socket): Too many open files (EMFILE)"),
            (.netlinkReply(operation: "list IPv4 rules", problem: "no answer from the kernel within 5 seconds"),
             "list IPv4 rules: no answer from the kernel within 5 seconds"),
            (.socketMark(fd: 7, mark: 0x534c, errno: EPERM),
             "setsockopt(SO_MARK=0x534c) on fd 7: Operation not permitted (EPERM) — run as root or grant CAP_NET_ADMIN"),
            (.socketMark(fd: 7, mark: nil, errno: EBADF), "getsockopt(SO_MARK) on fd 7: Bad file descriptor (EBADF)"),
            (.noSuchInterface(name: "sluice9"), "no network interface named sluice9 — check the name with `ip link`"),
        ]
        for (error, text) in cases {
            XCTAssertEqual(error.description, text)
        }
    }

    func testErrnoAccessorAndUnknownNames() {
        XCTAssertEqual(HostError.tunAttach(device: "x", errno: EBUSY).errno, EBUSY)
        XCTAssertEqual(HostError.noSuchInterface(name: "x").errno, ENODEV)
        XCTAssertNil(HostError.invalidInterfaceName(name: "", reason: "").errno)
        XCTAssertEqual(SystemError.name(4095), "errno 4095")
    }
}
