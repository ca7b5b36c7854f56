import SluiceStack

/// The stack's output segments can be held past the output call (`TCPStack.holdCurrentOutput`):
/// what `SegmentCoalescer` needs to gather runs of them without copying.
extension TCPStack: OutputPacketHolder {}
