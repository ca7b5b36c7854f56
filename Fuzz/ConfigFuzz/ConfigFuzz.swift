// libFuzzer entry point for the JSON config loader: a config file's bytes through ConfigFile and the
// validation of `sluice relay`, `up`, `bench` and `socks` (SluiceConfig built with -enable-testing; see
// Fuzz/README.md).
//
// The file is taken to live in a scratch directory (FuzzScratch) that holds a valid key file, a key
// file others may read, a PSK file and two auth files (0600 and 0644), so that key paths in the input can name real files. Beyond
// "never traps": a config is either accepted or refused with a ConfigError whose text names the
// file; an accepted one holds 32-byte keys. Inputs naming files outside the scratch directory are
// skipped (`FuzzScratch.isSafe`).
@testable import SluiceConfig

private let scratch = FuzzScratch.shared

@_cdecl("LLVMFuzzerTestOneInput")
public func configFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: data, count: size))
    let path = scratch.directory + "/fuzz.json"
    for command in [CommandSpec.relay, .up, .bench, .socks] {
        let owner = command.configFileOwner
        do {
            var entries = try ConfigFile.load(contents: bytes, path: path, command: owner)
            if owner.name != command.name { entries = entries.filter { command.flag(named: $0.key)?.inConfigFile == true } }
            guard scratch.isSafe(entries.values.flatMap(\.values)) else { continue }
            let built = try command.build(Settings(command: command, file: entries, flags: [:]))
            FuzzScratch.check(built)
        } catch {
            FuzzScratch.require(!error.description.isEmpty)
        }
    }
    return 0
}
