/// A check of the SOCKS5 server: connect, greeting and credentials, then close before any request.
/// The upstream runs one at start and after a failure, and carries new flows only once one passed,
/// so a wrong password or a dead server shows at once and in one place (its log line and `sluice
/// status`), not as every connection of every application refused.
final class SocksProbe: SocksConnection {
    private let completion: (SocksDialFailure?) -> Void

    init(upstream: SocksUpstream, completion: @escaping (SocksDialFailure?) -> Void) throws(SocksDialFailure) {
        self.completion = completion
        try super.init(upstream: upstream, request: nil)
    }

    override func handshakeAuthenticated() {
        closeSocket(reset: false)
        completion(nil)
    }

    override func handshakeFailed(_ failure: SocksDialFailure, requestSent: Bool) {
        completion(failure)
    }
}
