// Embedding SluiceTunnel (docs/embedding.md): the engine driven by a packet source of your own.
//
//   sluice-embed-example RELAY:PORT RELAY_PUBLIC_KEY PRIVATE_KEY_FILE
//
// The engine reads packets from one end of a SOCK_SEQPACKET socket pair; this example hands the
// other end to nobody, so it only connects, reports its events and prints statistics every five
// seconds. A real host passes that end to whoever produces the packets (a VM, an app's packet
// flow, a userspace network). Built with the package, so it cannot drift from the library's API.
import Glibc
import SluiceCrypto
import SluiceLoop
import SluiceTunnel
import SluiceWire

/// Prints the engine's events; a host would update its UI or its system status here.
final class EventPrinter: TunnelEventDelegate {
    func tunnel(_ engine: TunnelEngine, didEmit event: TunnelEvent) {
        switch event {
        case .connecting: say("connecting to \(engine.upstream.name)")
        case .connected: say("connected")
        case .carrierUp(let relay, let index): say("carrier #\(index) to \(relay) up")
        case .relayDown(let relay, let reason): say("relay \(relay) down: \(reason)")
        case .relayUp(let relay): say("relay \(relay) up")
        case .reconnecting(let reason): say("reconnecting: \(reason)")
        case .disconnected(let error): say("disconnected" + (error.map { ": \($0)" } ?? ""))
        case .error(let error): say("error (retrying): \(error)")
        }
    }
}

/// One line on standard output, unbuffered (a host would log or update its UI instead).
func say(_ text: String) {
    let line = text + "\n"
    _ = line.withCString { write(1, $0, strlen($0)) }
}

func fail(_ message: String) -> Never {
    let line = "sluice-embed-example: \(message)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
    exit(2)
}

let arguments = CommandLine.arguments
guard arguments.count == 4, let relay = SocketEndpoint(arguments[1]) else {
    fail("usage: sluice-embed-example RELAY:PORT RELAY_PUBLIC_KEY PRIVATE_KEY_FILE")
}
guard let relayKey = try? PublicKey(base64: arguments[2]) else { fail("the relay key is not a base64 public key") }
guard let file = fopen(arguments[3], "r") else { fail("cannot open \(arguments[3])") }
var line = [CChar](repeating: 0, count: 128)
let text = fgets(&line, Int32(line.count), file).map { String(cString: $0) } ?? ""
fclose(file)
guard let privateKey = try? PrivateKey(base64: text.trimmingTrailingNewline) else { fail("\(arguments[3]) holds no base64 private key") }

var pair: [Int32] = [-1, -1]
guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &pair) == 0 else { fail("socketpair failed") }

do {
    let loop = try EventLoop()
    var configuration = TunnelConfiguration(relay: relay, relayPublicKey: relayKey, privateKey: privateKey)
    configuration.carriers = 1
    let flow = SeqpacketFlow(fd: pair[0], mtu: configuration.mtu)
    let engine = try TunnelEngine(configuration: configuration, packetFlow: flow, loop: loop)
    let printer = EventPrinter()
    engine.delegate = printer
    try engine.start()
    // Statistics are read on the engine's thread; another thread would ask through
    // `LoopBound(engine, loop: loop).execute { engine in … engine.statistics() … }`.
    func report() {
        let s = engine.statistics()
        say("state \(s.state.rawValue), carriers up \(s.carriers.filter { $0.state == .up }.count), flows \(s.flows.tcp) TCP / \(s.flows.udpMappings) UDP")
        loop.schedule(afterMilliseconds: 5_000) { report() }
    }
    report()
    loop.run()
} catch {
    fail("\(error)")
}

extension String {
    var trimmingTrailingNewline: String {
        var s = self
        while s.last == "\n" || s.last == "\r" || s.last == " " { s.removeLast() }
        return s
    }
}
