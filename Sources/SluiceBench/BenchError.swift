import SluiceMux
import SluiceTunnel
import SluiceWire

/// Why `sluice bench` stopped without a result. Each renders as one sentence that says what to check.
public enum BenchError: Error, CustomStringConvertible {
    /// The first carrier could not be set up (connect failed, or the handshake got no answer).
    case dial(relay: SocketEndpoint, DialFailure)
    /// The relay answered a bench stream with RESET.
    case refused(BenchService, ResetReason, message: String)
    /// No OPEN_OK (nor RESET) within the answer timeout.
    case noAnswer(BenchService, seconds: UInt64)
    /// The relay did not finish the streams within the answer timeout after the client's FIN.
    case unfinished(BenchDirection, seconds: UInt64)
    /// A carrier closed during the run.
    case carrierLost(String)
    /// The event loop could not be set up.
    case system(String)

    public var description: String {
        switch self {
        case .dial(let relay, let why):
            return "cannot set up a carrier to \(relay): \(why)"
        case .refused(let service, let reason, let message):
            let detail = message.isEmpty ? "\(reason)" : message
            // A relay older than bench endpoints tries to resolve the name, which never resolves.
            let hint = reason == .unreachable && !message.contains("--no-bench")
                ? " — the relay may be older than this client and have no bench endpoints" : ""
            return "the relay refused the bench stream to \(service.destination) (\(service)): \(detail)\(hint)"
        case .noAnswer(let service, let seconds):
            return "the relay did not answer the bench stream to \(service.destination) within \(seconds) s — it may be overloaded, "
                + "or the carrier is stalled"
        case .unfinished(let direction, let seconds):
            return "the relay did not finish the \(direction.rawValue) streams within \(seconds) s of their end — the path may be stalled"
        case .carrierLost(let why):
            return "a carrier closed during the measurement: \(why)"
        case .system(let why):
            return why
        }
    }
}
