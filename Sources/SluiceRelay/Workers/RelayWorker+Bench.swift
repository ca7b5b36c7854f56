import SluiceMux

/// The built-in bench endpoints: a stream to `bench.sluice.invalid` is served by a `BenchEndpoint`
/// instead of a destination socket. It holds one of the client's stream slots like any stream.
extension RelayWorker {
    func startBench(_ stream: MuxStream, service: BenchService, client: ClientID) {
        let endpoint = BenchEndpoint(stream: stream, service: service) { [unowned self] endpoint in
            guard self.benches.removeValue(forKey: ObjectIdentifier(endpoint)) != nil else { return }
            self.releaseStreamSlot(client)
        }
        benches[ObjectIdentifier(endpoint)] = endpoint
        endpoint.start()
    }
}
