/// Values by file descriptor, stored at the descriptor's index: the loop looks up a handler for every
/// event it delivers, and a descriptor is a small integer the kernel hands out lowest-free first, so an
/// array indexed by it finds one without hashing. A `Dictionary` keyed by the descriptor hashed it
/// with SipHash on every event, about five times per new UDP socket through the relay (callgrind on
/// the relay under `Benchmarks/e2e/reqcpu.py --test udp-new --in-flight 1`).
///
/// The array grows to the highest descriptor stored and does not shrink: 16 bytes per slot for a
/// closure, 1 MiB at 65,536 descriptors.
struct DescriptorTable<Value> {
    private var slots: [Value?] = []

    /// The value stored for `fd`; nil for none, and for a negative descriptor (never stored).
    subscript(fd: Int32) -> Value? {
        get {
            let index = Int(fd)
            return index >= 0 && index < slots.count ? slots[index] : nil
        }
        set {
            let index = Int(fd)
            guard index >= 0 else { return }
            if index >= slots.count {
                guard newValue != nil else { return }
                slots.append(contentsOf: repeatElement(nil, count: Swift.max(index + 1, slots.count * 2) - slots.count))
            }
            slots[index] = newValue
        }
    }
}
