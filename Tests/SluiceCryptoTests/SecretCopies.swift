@testable import SluiceCrypto

/// Copies of secret buffers as arrays, for comparing them with known answers. Only tests make such
/// copies: the product reads secrets in place through `withUnsafeBytes`.
extension SecretBytes {
    var copiedBytes: [UInt8] { withUnsafeBytes { Array($0) } }
}

extension SymmetricKey {
    var copiedBytes: [UInt8] { secret.copiedBytes }
}

extension PrivateKey {
    var copiedBytes: [UInt8] { secret.copiedBytes }
}
