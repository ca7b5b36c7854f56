import Glibc
import SluiceLoop
import SluiceTunnel

/// A `PacketFlow` over a SOCK_SEQPACKET socket: every message is one IP packet, both ways — the
/// shape of a packet channel between an app and its network extension, or between a VM monitor
/// and the tunnel. No offloads: whole packets up to the MTU, checksums complete.
final class SeqpacketFlow: PacketFlow {
    let fd: Int32
    let format: PacketFlowFormat
    private var loop: EventLoop?

    init(fd: Int32, mtu: Int) {
        self.fd = fd
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        // Several packets per call: each is one recv, but the engine dispatches them as a batch.
        format = PacketFlowFormat(batchSize: 32, maximumPacketLength: mtu)
    }

    func start(on loop: EventLoop, readable: @escaping () -> Void) throws(PacketFlowError) {
        do {
            try loop.register(fd: fd, events: [.readable]) { _ in readable() }
        } catch {
            throw PacketFlowError("packet socket: \(error)")
        }
        self.loop = loop
    }

    func readPackets(into batch: PacketBatch) throws(PacketFlowError) {
        while let area = batch.nextPacketArea {
            let n = recv(fd, area.baseAddress, area.count, 0)
            if n > 0 {
                batch.commit(length: n)
                continue
            }
            if n == 0 { throw PacketFlowError("the packet source closed its end") }
            if errno == EAGAIN || errno == EINTR { return }
            throw PacketFlowError("recv: \(String(cString: strerror(errno)))")
        }
    }

    func writePackets(_ batch: PacketBatch) throws(PacketFlowError) -> Int {
        var written = 0
        for i in 0..<batch.count {
            let packet = batch.packet(i)
            if send(fd, packet.baseAddress, packet.count, Int32(MSG_NOSIGNAL)) == packet.count { written += 1 }
        }
        return written
    }

    func stop() {
        loop?.deregister(fd: fd)
        loop = nil
    }
}
