import CSodium

/// Wiping secret bytes (`sodium_memzero`, which the compiler may not optimise away) once they have
/// been used: key file contents, decoded keys, base64 text of keys.
///
/// What this can and cannot reach: a Swift array is a reference to a copy-on-write buffer. Wiping
/// through `withUnsafeMutableBytes` zeroes the buffer in place only while the array is its sole
/// owner; if the value was copied and the copy is still alive, the write first makes a private copy
/// and zeroes that, leaving the shared buffer as it was. And a buffer the array abandoned when it grew
/// is freed without being zeroed. So the code that handles secrets reads them into buffers allocated
/// once at their final size, and wipes them where it made them, before handing on only what must
/// live on.
public enum Secrets {
    /// Zeroes every byte of `bytes` (keeping its count).
    public static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { wipe($0) }
    }

    /// Zeroes the memory `buffer` covers.
    public static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress else { return }
        sodium_memzero(base, buffer.count)
    }
}
