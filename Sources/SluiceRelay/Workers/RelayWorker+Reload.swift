import SluiceCrypto

/// A reload on one worker, on its loop: its copy of the settings is replaced, carriers of clients
/// whose key left the allow-list are closed, and streams to destinations the new policy refuses are
/// reset (`RelayServer+Reload.swift` says what a reload changes and what it keeps).
extension RelayWorker {
    /// What a reload did on one worker, summed by the front into its report.
    struct ReloadEffect: Sendable {
        var carriersClosed = 0
        var streamsReset = 0
    }

    func apply(_ new: RelaySettings, removedClients removed: Set<PublicKey>) -> ReloadEffect {
        let old = settings
        settings = new
        var effect = ReloadEffect()
        // The front made new buckets at the new rate (`ClientLimits.resetRates`); old debt goes too.
        if new.maxStreamRate != old.maxStreamRate { openDebt.removeAll() }
        for entry in Array(carriers.values) where removed.contains(entry.client.key) {
            entry.carrier.close(.clientRemoved)
            effect.carriersClosed += 1
        }
        if new.destinationPolicy != old.destinationPolicy {
            for link in Array(links.values) {
                guard let rule = new.destinationPolicy.refusal(of: link.destination.address) else { continue }
                link.refuse(PolicyRefusal(destination: "\(link.destination)", rule: rule))
                effect.streamsReset += 1
            }
        }
        return effect
    }
}
