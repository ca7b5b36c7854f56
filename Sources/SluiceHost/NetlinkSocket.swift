import CSluiceHostShims
import Glibc
import SluiceSystem

/// A `NETLINK_ROUTE` socket: the kernel's interface for links, addresses, routes and policy rules
/// (what `ip link/addr/route/rule` speak). Each request carries a fresh sequence number and asks
/// for an ACK; the matching `NLMSG_ERROR` says whether it worked, and a failure becomes a
/// `HostError.netlinkRequest` naming the operation, with the kernel's extended-ACK message.
///
/// The operations live in extensions: `Link.swift`, `InterfaceAddress.swift`, `Route.swift`,
/// `PolicyRule.swift`. Thread rule: one request at a time; use it from one thread (control path).
public final class NetlinkSocket {
    /// How long a request may wait for the kernel's answer before it fails.
    public static let replyTimeoutSeconds = 5

    private let fd: Int32
    private var sequence: UInt32

    /// Opens and binds the socket, asking for extended ACKs (the kernel's error text) and capped
    /// ACKs (errors do not echo the whole request back).
    public init() throws(HostError) {
        do {
            fd = try syscall("socket(NETLINK_ROUTE)") { socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), NETLINK_ROUTE) }
        } catch {
            throw .netlinkSocket(operation: "socket(AF_NETLINK)", errno: error.code)
        }
        sequence = UInt32.random(in: 1...UInt32.max / 2)
        do throws(HostError) {
            var local = sockaddr_nl()
            local.nl_family = sa_family_t(AF_NETLINK)
            try call("bind") {
                withUnsafePointer(to: &local) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
                    }
                }
            }
            try setOption(SOL_NETLINK, NETLINK_EXT_ACK, Int32(1), "setsockopt(NETLINK_EXT_ACK)")
            try setOption(SOL_NETLINK, NETLINK_CAP_ACK, Int32(1), "setsockopt(NETLINK_CAP_ACK)")
            try setOption(SOL_SOCKET, SO_RCVTIMEO, timeval(tv_sec: Self.replyTimeoutSeconds, tv_usec: 0), "setsockopt(SO_RCVTIMEO)")
        } catch {
            close(fd)
            throw error
        }
    }

    deinit {
        close(fd)
    }

    private func call(_ operation: String, _ body: () -> Int32) throws(HostError) {
        do {
            _ = try syscall(operation, body)
        } catch {
            throw .netlinkSocket(operation: operation, errno: error.code)
        }
    }

    private func setOption<T: BitwiseCopyable>(_ level: Int32, _ name: Int32, _ value: T, _ operation: String) throws(HostError) {
        var value = value
        try call(operation) { setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<T>.size)) }
    }

    // MARK: requests

    /// Sends `message` with `NLM_F_REQUEST | NLM_F_ACK` and waits for its ACK; returns the
    /// messages that came before the ACK (the answer to a `RTM_GET*` without `NLM_F_DUMP`).
    /// `operation` names the change in errors (`add route 10.20.0.0/24 dev sluice0 table 21324`).
    @discardableResult
    func execute(_ message: NetlinkMessage, operation: String) throws(HostError) -> [NetlinkMessage] {
        let seq = try send(message, extraFlags: NLM_F_ACK, operation: operation)
        var answers: [NetlinkMessage] = []
        while true {
            for reply in try receive(operation: operation) where reply.sequence == seq {
                if reply.type == NLMSG_ERROR {
                    try Self.checkError(reply, operation: operation)
                    return answers
                }
                answers.append(reply)
            }
        }
    }

    /// Sends `message` with `NLM_F_REQUEST | NLM_F_DUMP` and returns every answer up to `NLMSG_DONE`.
    /// A dump the kernel marks inconsistent (`NLM_F_DUMP_INTR`: the table changed meanwhile) is retried.
    func dump(_ message: NetlinkMessage, operation: String) throws(HostError) -> [NetlinkMessage] {
        for _ in 0..<5 {
            let seq = try send(message, extraFlags: NLM_F_DUMP, operation: operation)
            var results: [NetlinkMessage] = []
            var interrupted = false
            collecting: while true {
                for reply in try receive(operation: operation) where reply.sequence == seq {
                    if Int32(reply.flags) & NLM_F_DUMP_INTR != 0 { interrupted = true }
                    switch Int32(reply.type) {
                    case NLMSG_DONE:
                        try Self.checkError(reply, operation: operation)
                        break collecting
                    case NLMSG_ERROR:
                        try Self.checkError(reply, operation: operation)
                    case NLMSG_NOOP:
                        continue
                    default:
                        results.append(reply)
                    }
                }
            }
            if !interrupted { return results }
        }
        throw .netlinkReply(operation: operation, problem: "the table kept changing during the dump; try again")
    }

    private func send(_ message: NetlinkMessage, extraFlags: Int32, operation: String) throws(HostError) -> UInt32 {
        sequence &+= 1
        var message = message
        message.sequence = sequence
        message.flags |= UInt16(NLM_F_REQUEST | extraFlags)
        let bytes = message.encoded()
        var kernel = sockaddr_nl()
        kernel.nl_family = sa_family_t(AF_NETLINK)
        let sent: Int
        do {
            sent = try syscall("send") {
                withUnsafePointer(to: &kernel) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
                    }
                }
            }
        } catch {
            throw .netlinkRequest(operation: operation, errno: error.code, kernelMessage: nil)
        }
        guard sent == bytes.count else {
            throw .netlinkReply(operation: operation, problem: "the kernel took \(sent) of \(bytes.count) request bytes")
        }
        return sequence
    }

    /// Receives one datagram from the kernel (others are ignored) and splits it into messages.
    private func receive(operation: String) throws(HostError) -> [NetlinkMessage] {
        while true {
            let size: Int
            do {
                // MSG_PEEK | MSG_TRUNC reports the datagram's real size, so a large dump part fits.
                size = try syscall("recv") { recv(fd, nil, 0, Int32(MSG_PEEK | MSG_TRUNC)) }
            } catch {
                throw receiveError(error, operation: operation)
            }
            var buffer = [UInt8](repeating: 0, count: max(size, NetlinkMessage.headerLength))
            var from = sockaddr_nl()
            var fromLength = socklen_t(MemoryLayout<sockaddr_nl>.size)
            let count: Int
            do {
                count = try syscall("recv") {
                    buffer.withUnsafeMutableBytes { raw in
                        withUnsafeMutablePointer(to: &from) {
                            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                                recvfrom(fd, raw.baseAddress, raw.count, 0, $0, &fromLength)
                            }
                        }
                    }
                }
            } catch {
                throw receiveError(error, operation: operation)
            }
            guard from.nl_pid == 0 else { continue }  // only the kernel answers our requests
            guard let messages = NetlinkMessage.decode(datagram: Array(buffer.prefix(count))) else {
                throw .netlinkReply(operation: operation, problem: "the kernel's answer has an impossible length field")
            }
            return messages
        }
    }

    private func receiveError(_ error: SystemError, operation: String) -> HostError {
        if error.code == EAGAIN {
            return .netlinkReply(operation: operation, problem: "no answer from the kernel within \(Self.replyTimeoutSeconds) seconds")
        }
        return .netlinkRequest(operation: operation, errno: error.code, kernelMessage: nil)
    }

    /// Throws if `reply` (`NLMSG_ERROR` or `NLMSG_DONE`) carries a negative errno.
    /// `NLMSG_ERROR` payload: `struct nlmsgerr` (errno and the echoed request header, or the whole
    /// request without `NETLINK_CAP_ACK`), then, with `NLM_F_ACK_TLVS`, the extended-ACK attributes.
    private static func checkError(_ reply: NetlinkMessage, operation: String) throws(HostError) {
        guard let code = reply.familyHeader(Int32.self) else {
            if reply.type == NLMSG_DONE { return }  // old kernels sent an empty DONE
            throw .netlinkReply(operation: operation, problem: "the kernel's error message is truncated")
        }
        guard code < 0 else { return }
        var kernelMessage: String?
        if Int32(reply.flags) & NLM_F_ACK_TLVS != 0 {
            var skip = MemoryLayout<Int32>.size
            if reply.type == NLMSG_ERROR {
                let echoed = reply.payload.count >= 20
                    ? reply.payload.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 4, as: nlmsghdr.self) }
                    : nil
                let capped = Int32(reply.flags) & NLM_F_CAPPED != 0
                skip += capped ? NetlinkMessage.headerLength : Int(sluice_nlmsg_align(echoed?.nlmsg_len ?? 16))
            }
            let attributes = NetlinkAttributes(reply.payload, from: skip)
            kernelMessage = attributes.string(NLMSGERR_ATTR_MSG.rawValue).flatMap { $0.isEmpty ? nil : $0 }
        }
        throw .netlinkRequest(operation: operation, errno: -code, kernelMessage: kernelMessage)
    }
}
