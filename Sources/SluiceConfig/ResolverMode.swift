/// How `sluice up` points the host's DNS at the tunnel (`--resolver`).
public enum ResolverMode: String, Sendable, Equatable, CaseIterable {
    /// systemd-resolved when it runs (it owns `org.freedesktop.resolve1` on the system bus), the
    /// resolver file otherwise.
    case auto
    /// systemd-resolved over D-Bus: the TUN link gets the `--dns` servers and routing domains;
    /// `up` fails when resolved does not run.
    case resolved
    /// `/etc/resolv.conf` (with `--route-all`), never systemd-resolved.
    case file
}
