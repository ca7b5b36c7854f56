/// An object that queues itself, rather than a closure, to run at the end of a loop turn
/// (`EventLoop.afterTurn(_:)`) or after the turn's output (`afterOutput(_:)`): for work a data path
/// queues on every turn, such as a batch's flush or a bundle's seal. A queued closure allocates its
/// context and frees it once it ran, about 500 instructions a time; a UDP request through the path
/// queued two at the client and three at the relay, 4–8 % of either end's instructions per request
/// (callgrind, `Benchmarks/e2e/reqcpu.py --test udp-rr` with both ends under valgrind). A queued
/// object costs a retain and a release, and is held until it has run, as a closure that captured it
/// strongly would hold it.
public protocol TurnAction: AnyObject {
    /// The work; runs once for each time the object was queued.
    func runTurnAction()
}
