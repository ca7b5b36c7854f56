import SluiceIO
import SluiceLog
import SluiceMux
import SluiceSystem
import SluiceWire

/// One worker's UDP path socket (docs/protocol.md §8), bound on the front's thread and handed to
/// its worker, and which path indices that worker gives out.
///
/// With one worker it is one socket on the listener's port, as it always was. With N it is one per
/// worker, all bound to that port with SO_REUSEPORT, worker 0's first, so worker w's socket has
/// place w in the kernel's group; a classic BPF program on the group gives each datagram to the
/// socket at place `index % N`, `index` being the path header's receiver index (bytes 4-7, the same
/// both ways and in every kind of packet, PROBE included). Worker w gives out only indices with
/// `index % N == w`, so every path packet of a carrier lands on the worker that holds the carrier,
/// its associations and its `PathSession`: no packet crosses threads, no lock on the data path.
/// A datagram too short to hold an index goes to worker 0, which drops it as malformed, as before.
///
/// Why not one socket on worker 0 passing packets on: that is a cross-thread hop (an eventfd
/// wake-up and a copy) per datagram each way, on the path whose point is latency. Why not hash by
/// the client's address (SO_REUSEPORT's default): a client picks its port and may roam (§8.6),
/// while the index is the relay's own choice. The group admits only sockets of the relay's user.
struct PathSocket: Sendable {
    let socket: Socket
    /// On `[::]`: it sends to IPv4 clients as IPv4-mapped addresses.
    let dualStack: Bool
    /// This worker's place, and the number of workers: the indices it gives out are `residue`
    /// modulo `workers`.
    let residue: Int
    let workers: Int

    /// A path index of this worker's class (random, not 0), not among `taken`.
    func newIndex(isTaken taken: (UInt32) -> Bool) -> UInt32 {
        let modulus = UInt32(workers)
        let lastClass = (UInt32.max - UInt32(residue)) / modulus
        var index: UInt32
        repeat {
            index = UInt32.random(in: 0...lastClass) * modulus + UInt32(residue)
        } while index == 0 || taken(index)
        return index
    }

    /// A socket for each of `count` workers on `endpoint` (the carrier listener's), in worker order;
    /// nil, after a warning, when they cannot all be had — the relay then does without the path.
    static func bind(_ endpoint: SocketEndpoint, workers count: Int) -> [PathSocket]? {
        var sockets: [Socket] = []
        do throws(SystemError) {
            for _ in 0..<count { sockets.append(try Socket.udpBound(on: endpoint, reusePort: count > 1)) }
            if count > 1 { try sockets[0].steerReusePortGroup(byU32At: PathHeader.indexOffset, groups: count) }
        } catch {
            for socket in sockets { socket.close() }
            Log.warning("no UDP path: \(error); clients carry UDP flows on their carriers", "relay")
            return nil
        }
        return sockets.enumerated().map {
            PathSocket(socket: $0.element, dualStack: !endpoint.address.isIPv4, residue: $0.offset, workers: count)
        }
    }
}
