import SluiceWire

/// Prefix arithmetic the config checks need. (A candidate for SluiceWire if other modules want it.)
extension IPPrefix {
    /// The address with every bit beyond `length` cleared: 10.20.0.0 for 10.20.0.1/24.
    var network: IPAddress {
        IPAddress(bytes: masked(keepingHostBits: false))
    }

    /// The prefix with host bits cleared, which is what a route must be.
    var canonical: IPPrefix {
        IPPrefix(address: network, length: length)!
    }

    /// The IPv4 broadcast address of this prefix (all host bits set).
    var broadcast: IPAddress {
        IPAddress(bytes: masked(keepingHostBits: true))
    }

    private func masked(keepingHostBits setHostBits: Bool) -> [UInt8] {
        var bytes = address.bytes
        for i in bytes.indices {
            let prefixBitsHere = Swift.max(0, Swift.min(8, length - i * 8))
            let networkMask = UInt8(truncatingIfNeeded: 0xFF << (8 - prefixBitsHere))
            bytes[i] = setHostBits ? bytes[i] | ~networkMask : bytes[i] & networkMask
        }
        return bytes
    }
}

extension IPAddress {
    /// 0.0.0.0 or ::.
    var isUnspecified: Bool {
        bytes.allSatisfy { $0 == 0 }
    }

    /// 224.0.0.0/4 or ff00::/8.
    var isMulticast: Bool {
        switch self {
        case .v4(let a): return a >> 28 == 0xE
        case .v6(let hi, _): return hi >> 56 == 0xFF
        }
    }
}
