import SluiceIO
import SluiceLog
import SluiceMux
import SluiceSocks
import SluiceSystem
import SluiceTunnel
import SluiceWire

/// The front-end's side of a SOCKS5 UDP ASSOCIATE (RFC 1928 §7): a UDP socket on the address the
/// client reached us at, whose datagrams (each with its SOCKS5 header) become datagrams of one mux
/// UDP association (docs/protocol.md §6), and whose answers go back to the client with the header
/// naming their source. It lives as long as the client's TCP control connection. Loop-confined.
///
/// Only the client's own address may use it, from one port: the request's DST.PORT when it gave
/// one, else the port of the first datagram. A datagram addressed to a domain name is dropped: the
/// mux carries datagrams to IP endpoints only, and resolving the name here would send a DNS query
/// past the relay.
final class SocksUDPRelay: UpstreamAssociationHandler {
    let socket: Socket
    let bound: SocketEndpoint
    private unowned let server: ProxyServer
    private unowned let control: ProxyConnection
    private let clientAddress: IPAddress
    private var clientPort: UInt16?
    private var association: UpstreamAssociation?
    private var closed = false

    init(server: ProxyServer, control: ProxyConnection, client: IPAddress, expectedPort: UInt16, local: IPAddress) throws(SystemError) {
        self.server = server
        self.control = control
        clientAddress = client
        clientPort = expectedPort == 0 ? nil : expectedPort
        let s = try Socket.udp(for: local)
        bound = try s.closingOnFailure { () throws(SystemError) in
            try s.bind(to: SocketEndpoint(address: local, port: 0))
            return try s.localEndpoint()
        }
        socket = s
        try s.closingOnFailure { () throws(SystemError) in
            try server.loop.register(fd: s.fd, events: [.readable, .edgeTriggered]) { [unowned self] _ in self.receive() }
        }
        Log.debug("\(control.peer): UDP association on \(bound)", "proxy")
    }

    func close() {
        guard !closed else { return }
        closed = true
        association?.close()
        association = nil
        server.loop.forgetBeforeClose(fd: socket.fd)
        socket.close()
    }

    // MARK: client -> relay

    private func receive() {
        while !closed {
            let result = server.scratch.withUnsafeMutableBytes { try? socket.receive(datagramInto: $0) }
            guard case .done((let n, let source?))? = result else { return }
            guard source.address == clientAddress, clientPort == nil || clientPort == source.port else {
                server.count("udp-foreign-source")
                continue
            }
            clientPort = source.port
            server.scratch.withUnsafeBytes { forward(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
    }

    private func forward(_ datagram: UnsafeRawBufferPointer) {
        guard let header = try? SocksUDPHeader.decode(datagram: datagram) else { return server.count("udp-malformed") }
        guard header.value.fragment == 0 else { return server.count("udp-fragment") }
        guard let destination = header.value.address.endpoint else { return server.count("udp-to-domain") }
        let payload = UnsafeRawBufferPointer(rebasing: datagram[header.length...])
        if association?.isClosed != false {
            do {
                association = try server.upstream.openAssociation(to: Destination(destination), handler: self)
            } catch {
                return server.count("udp-no-carrier")
            }
        }
        if association?.send(payload, to: destination) != .sent { server.count("udp-carrier-full") }
    }

    // MARK: relay -> client

    func association(_ association: UpstreamAssociation, didReceive payload: UnsafeRawBufferPointer, from source: SocketEndpoint) {
        guard let clientPort, !closed else { return }
        let client = SocketEndpoint(address: clientAddress, port: clientPort)
        server.reply.withUnsafeMutableBytes { buffer in
            guard let n = SocksUDPHeader.write(ipSource: SocksAddress(source), into: buffer), n + payload.count <= buffer.count else { return }
            if let base = payload.baseAddress { (buffer.baseAddress! + n).copyMemory(from: base, byteCount: payload.count) }
            _ = try? socket.send(datagram: UnsafeRawBufferPointer(rebasing: buffer[0..<n + payload.count]), to: client, dualStack: false)
        }
    }

    func association(_ association: UpstreamAssociation, datagramTo endpoint: SocketEndpoint, failed code: DatagramErrorCode, mtu: Int) {}

    func associationDidEnd(_ association: UpstreamAssociation) {
        if self.association === association { self.association = nil }
    }
}
