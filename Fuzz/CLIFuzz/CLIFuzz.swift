// libFuzzer entry point for the command line: `sluice`'s arguments through CommandLineParser (SluiceConfig
// built with -enable-testing; see Fuzz/README.md).
//
// The input is split at zero bytes into arguments. They run in a scratch directory (FuzzScratch)
// holding key files and a valid client config, `client.json`, so that `--config` and key flags can
// name real files. Beyond "never traps": the result is a command or a ConfigError with text, help is
// never empty, and an accepted command's keys are 32 bytes. Arguments naming files outside the
// scratch directory are skipped (`FuzzScratch.isSafe`).
@testable import SluiceConfig

private let scratch = FuzzScratch.shared

@_cdecl("LLVMFuzzerTestOneInput")
public func cliFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    _ = scratch
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    let arguments = bytes.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    guard scratch.isSafe(arguments) else { return 0 }
    do {
        FuzzScratch.check(try CommandLineParser.parse(arguments: arguments))
    } catch {
        FuzzScratch.require(!error.description.isEmpty)
    }
    return 0
}
