import SluiceCarrier
import SluiceLog
import SluiceLoop
import SluiceMux
import SluiceWire

/// Streams and UDP associations: the per-client stream cap, the bench endpoints, name resolution,
/// and the destination policy, which judges every address the relay would connect or send to —
/// after resolution for a name, so a name that resolves to a refused address is refused too (no
/// DNS-rebinding way around it). The caps and the rate are per client over all workers
/// (`ClientLimits`).
extension RelayWorker {
    func open(_ stream: MuxStream, to destination: Destination, client: ClientID) {
        // Past the rate the client's carriers stop being read (Carrier.readDelay): the client slows
        // down by TCP's backpressure rather than being answered with resets it could ignore.
        let wait = limits.takeOpen(client, rate: settings.maxStreamRate, now: loop.now)
        if wait > 0 { openDebt[client] = loop.now + wait }
        if stream.isAssociation {
            openAssociation(stream, client: client)
            return
        }
        guard limits.takeStreamSlot(client, cap: settings.maxStreamsPerClient) else {
            if let heldBack = streamLog.admit(client, now: loop.now) {
                Log.info("client \(client): stream to \(destination) refused: limit of \(settings.maxStreamsPerClient) open streams reached"
                         + streamLog.suffix(heldBack), "relay")
            }
            counters.streamsRefused[.limit, default: 0] += 1
            stream.reset(.limit, message: "the relay's limit of \(settings.maxStreamsPerClient) streams per client is reached")
            return
        }
        switch BenchEndpoint.route(destination, enabled: settings.benchEnabled) {
        case .destination:
            break
        case .serve(let service):
            startBench(stream, service: service, client: client)
            return
        case .refuse(let reason, let message):
            releaseStreamSlot(client)
            Log.info("client \(client): stream to \(destination) refused: \(message)", "relay")
            counters.streamsRefused[reason, default: 0] += 1
            stream.reset(reason, message: message)
            return
        }
        switch destination.host {
        case .ip(let address):
            let endpoint = SocketEndpoint(address: address, port: destination.port)
            if let rule = settings.destinationPolicy.refusal(of: address) {
                refuse(stream, PolicyRefusal(destination: "\(endpoint)", rule: rule), client: client)
                return
            }
            startLink(stream, to: endpoint, client: client)
        case .domain(let name):
            let port = destination.port
            let context = LoopBound((self, stream), loop: loop)
            NameResolver.resolve(name) { addresses in
                context.execute { worker, stream in worker.resolved(name, port: port, to: addresses, stream: stream, client: client) }
            }
        }
    }

    /// A name's addresses came back: connects to the first the policy allows (IPv4 first).
    private func resolved(_ name: String, port: UInt16, to addresses: [IPAddress], stream: MuxStream, client: ClientID) {
        guard !stream.isClosed else {
            releaseStreamSlot(client)
            return
        }
        guard let first = addresses.first else {
            releaseStreamSlot(client)
            Log.info("client \(client): stream to \(name) refused: the name did not resolve", "relay")
            counters.streamsRefused[.unreachable, default: 0] += 1
            stream.reset(.unreachable, message: "\(name) did not resolve")
            return
        }
        let policy = settings.destinationPolicy
        guard let allowed = addresses.first(where: policy.allows) else {
            let shown = addresses.count == 1 ? "\(first)" : "\(first) and \(addresses.count - 1) more"
            refuse(stream, PolicyRefusal(destination: "\(name):\(port) (\(shown))", rule: policy.refusal(of: first)!), client: client)
            return
        }
        startLink(stream, to: SocketEndpoint(address: allowed, port: port), client: client)
    }

    private func refuse(_ stream: MuxStream, _ refusal: PolicyRefusal, client: ClientID) {
        releaseStreamSlot(client)
        refusals.note(refusal, client: client, udp: false)
        counters.streamsRefused[.forbidden, default: 0] += 1
        stream.reset(PolicyRefusal.resetReason(on: stream.session), message: refusal.message)
    }

    /// A datagram of `link` to `endpoint` that the policy refuses: DATAGRAM_ERROR back, nothing sent.
    /// Returns false when the datagram may go.
    func refuseDatagram(on link: AssociationLink, to endpoint: SocketEndpoint) -> Bool {
        guard let rule = settings.destinationPolicy.refusal(of: endpoint.address) else { return false }
        let refusal = PolicyRefusal(destination: "\(endpoint)", rule: rule)
        refusals.note(refusal, client: link.client, udp: true)
        counters.datagramsRefused += 1
        link.stream.sendDatagramError(PolicyRefusal.datagramError(on: link.stream.session), endpoint: endpoint)
        return true
    }

    // MARK: UDP associations

    /// A UDP association: evicts the client's longest-idle one when it is at its cap — on this
    /// worker if it holds another, else on the worker that holds the most (which evicts on its own
    /// loop a moment later, so for that moment the client holds one over its cap).
    ///
    /// The client's idle list is looked up after the eviction: evicting the last association of the
    /// list removes the list, and one taken before would hold the new association where neither the
    /// sweep nor a later eviction looks.
    private func openAssociation(_ stream: MuxStream, client: ClientID) {
        if let evicting = limits.addMapping(client, on: index, cap: settings.maxUDPMappingsPerClient) {
            if evicting == index {
                // addMapping just found the client over its cap: no need to ask the limits again.
                idleAssociations[client]?.oldest?.evict(evictionReason)
            } else {
                directory?.execute(on: evicting) { worker in worker.evictOldestMapping(of: client) }
            }
        }
        let idle: IdleList<AssociationLink>
        if let list = idleAssociations[client] {
            idle = list
        } else {
            idle = IdleList()
            idleAssociations[client] = idle
        }
        let link = AssociationLink(stream: stream, client: client, idle: idle, worker: self, loop: loop)
        associations[ObjectIdentifier(link)] = link
        idle.touch(link)
        link.start()
        scheduleSweep()
    }

    static func evictionReason(_ settings: RelaySettings) -> String {
        "evicted: the client holds \(settings.maxUDPMappingsPerClient) UDP mappings"
    }

    /// Another worker's new association put `client` over its cap: the longest idle here goes — unless
    /// the client is within its cap again (one of its associations ended while the request was on its
    /// way here).
    func evictOldestMapping(of client: ClientID) {
        guard limits.udpMappings(of: client) > settings.maxUDPMappingsPerClient else { return }
        idleAssociations[client]?.oldest?.evict(evictionReason)
    }

    func associationEnded(_ link: AssociationLink) {
        guard associations.removeValue(forKey: ObjectIdentifier(link)) != nil else { return }
        limits.removeMapping(link.client, on: index)
        link.idle.remove(link)
        if link.idle.count == 0 { idleAssociations[link.client] = nil }
    }

    /// Once a second while associations exist: closes those idle past the UDP timeout.
    private func scheduleSweep() {
        guard sweepTimer?.isPending != true else { return }
        // Strong capture: the relay lives as long as its loop (see EventLoop.schedule on weak captures).
        sweepTimer = loop.schedule(afterMilliseconds: 1000) {
            let now = self.loop.now, timeout = self.settings.udpTimeoutMilliseconds
            // Longest idle first; expiring one removes it from its list (associationEnded).
            for idle in Array(self.idleAssociations.values) {
                while let oldest = idle.oldest, now - oldest.lastActivity >= timeout {
                    oldest.expire("idle for \(timeout / 1000) s")
                }
            }
            if !self.associations.isEmpty { self.scheduleSweep() }
        }
    }

    // MARK: TCP streams

    private func startLink(_ stream: MuxStream, to destination: SocketEndpoint, client: ClientID) {
        let link = DestinationLink(stream: stream, destination: destination, client: client, worker: self, loop: loop)
        links[ObjectIdentifier(link)] = link
        link.start()
    }

    func releaseStreamSlot(_ client: ClientID) { limits.releaseStreamSlot(client) }

    func linkEnded(_ link: DestinationLink) {
        guard links.removeValue(forKey: ObjectIdentifier(link)) != nil else { return }
        releaseStreamSlot(link.client)
    }
}
