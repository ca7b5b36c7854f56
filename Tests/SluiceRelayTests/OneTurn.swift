import SluiceLoop

/// Runs one turn of `loop` without waiting for events: what the turn batched goes out, then what waits
/// for its output (`EventLoop.afterOutput`).
func runOneTurn(_ loop: EventLoop) {
    loop.afterTurn { loop.stop() }
    loop.run()
}
