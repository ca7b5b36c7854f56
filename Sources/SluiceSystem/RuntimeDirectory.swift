/// Where a running `sluice up` keeps its crash record (`<tun>.json`) and where running tunnels and
/// relays listen for control requests (`<tun>.sock`, `relay-<port>.sock`): one place, so that
/// `sluice down` and `sluice status` find every one of them.
public enum RuntimeDirectory {
    public static let path = "/run/sluice"
}
