import CLwIP

// lwIP calls back through C function pointers; each recovers its Swift object from the `arg` or netif
// state pointer (unretained: the stack's flow table owns the flows, the owner owns the stack).

private func stack(of netif: UnsafeMutablePointer<netif>?) -> TCPStack {
    Unmanaged<TCPStack>.fromOpaque(sluice_netif_state(netif)!).takeUnretainedValue()
}

/// netif->output and netif->output_ip6: one IP packet toward the application.
private func writePacket(_ netif: UnsafeMutablePointer<netif>?, _ p: UnsafeMutablePointer<pbuf>?) -> err_t {
    guard let p else { return err_t(ERR_OK.rawValue) }
    let stack = stack(of: netif)
    if p.pointee.next == nil {
        stack.outputBuffer = p
        stack.emit(UnsafeRawBufferPointer(start: p.pointee.payload, count: Int(p.pointee.len)))
        stack.outputBuffer = nil
    } else {
        let total = Int(p.pointee.tot_len)
        stack.scratch.withUnsafeMutableBytes { buf in
            let n = Int(pbuf_copy_partial(p, buf.baseAddress, UInt16(min(total, buf.count)), 0))
            stack.emit(UnsafeRawBufferPointer(rebasing: buf[0..<n]))
        }
    }
    return err_t(ERR_OK.rawValue)
}

let lwipOutput4: sluice_output4_fn = { netif, p, _ in writePacket(netif, p) }
let lwipOutput6: sluice_output6_fn = { netif, p, _ in writePacket(netif, p) }

let lwipAccept: sluice_accept_fn = { arg, newpcb, err in
    guard let arg, let newpcb, err == err_t(ERR_OK.rawValue) else { return err_t(ERR_VAL.rawValue) }
    let stack = Unmanaged<TCPStack>.fromOpaque(arg).takeUnretainedValue()
    guard let flow = stack.accepted(newpcb) else {
        tcp_abort(newpcb)
        return err_t(ERR_ABRT.rawValue)
    }
    tcp_arg(newpcb, Unmanaged.passUnretained(flow).toOpaque())
    tcp_recv(newpcb, lwipRecv)
    tcp_sent(newpcb, lwipSent)
    tcp_err(newpcb, lwipErr)
    return err_t(ERR_OK.rawValue)
}

private func flow(_ arg: UnsafeMutableRawPointer?) -> TCPFlow? {
    arg.map { Unmanaged<TCPFlow>.fromOpaque($0).takeUnretainedValue() }
}

private let lwipRecv: tcp_recv_fn = { arg, _, p, err in
    guard let flow = flow(arg) else {
        if let p { pbuf_free(p) }
        return err_t(ERR_OK.rawValue)
    }
    flow.lwipReceived(p)
    return err_t(ERR_OK.rawValue)
}

private let lwipSent: tcp_sent_fn = { arg, _, _ in
    flow(arg)?.lwipSent()
    return err_t(ERR_OK.rawValue)
}

private let lwipErr: tcp_err_fn = { arg, _ in
    flow(arg)?.lwipFailed()
}
