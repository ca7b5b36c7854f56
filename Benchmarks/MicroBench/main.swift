// Micro-benchmarks: `swift run -c release MicroBench [suite...]` (all suites when none is named).
// Each suite lives in its own file as an enum with a static `run()`; register it here.
let suites: [(name: String, run: () -> Void)] = [
    ("records", RecordBenchmark.run),
    ("path", PathBenchmark.run),
    ("wire", WireBenchmark.run),
    ("mux", MuxBenchmark.run),
    ("lwip", LwIPBenchmark.run),
]

let requested = Set(CommandLine.arguments.dropFirst())
for suite in suites where requested.isEmpty || requested.contains(suite.name) {
    print("== \(suite.name)")
    suite.run()
}
