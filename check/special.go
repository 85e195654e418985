package check

import "net/netip"

// specialV4 and specialV6 are the special-purpose address blocks (IANA
// IPv4 and IPv6 Special-Purpose Address Registries, RFC 6890 and its
// updates) that fetch-links safe refuses: none is a public host a
// server's link has any business making the checker's machine visit.
// Blocks IANA marks globally reachable but that lead into a translator
// or a tunnel (NAT64, 2001::/23 as a whole) are refused too.
var (
	specialV4 = prefixes(
		"0.0.0.0/8",          // "this network"
		"10.0.0.0/8",         // private
		"100.64.0.0/10",      // shared address space (CGNAT; cloud metadata such as 100.100.100.200)
		"127.0.0.0/8",        // loopback
		"169.254.0.0/16",     // link-local (cloud metadata 169.254.169.254)
		"172.16.0.0/12",      // private
		"192.0.0.0/24",       // IETF protocol assignments
		"192.0.2.0/24",       // documentation (TEST-NET-1)
		"192.88.99.0/24",     // 6to4 relay anycast (deprecated)
		"192.168.0.0/16",     // private
		"198.18.0.0/15",      // benchmarking
		"198.51.100.0/24",    // documentation (TEST-NET-2)
		"203.0.113.0/24",     // documentation (TEST-NET-3)
		"224.0.0.0/4",        // multicast
		"240.0.0.0/4",        // reserved
		"255.255.255.255/32", // limited broadcast
	)
	specialV6 = prefixes(
		"::/96",          // unspecified, loopback and the deprecated IPv4-compatible addresses
		"64:ff9b::/96",   // NAT64 well-known prefix
		"64:ff9b:1::/48", // local-use IPv4/IPv6 translation
		"100::/64",       // discard-only
		"2001::/23",      // IETF protocol assignments (Teredo, ORCHID, …)
		"2001:db8::/32",  // documentation
		"3fff::/20",      // documentation
		"5f00::/16",      // segment routing SIDs
		"fc00::/7",       // unique local
		"fe80::/10",      // link-local
		"fec0::/10",      // site-local (deprecated)
		"ff00::/8",       // multicast
	)
	// sixToFour is 2002::/16, whose addresses embed an IPv4 address.
	sixToFour = netip.MustParsePrefix("2002::/16")
)

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// specialPurpose reports whether ip is not a public unicast address: in a
// special-purpose block, an IPv4-mapped or 6to4 address embedding one,
// or not a valid address at all.
func specialPurpose(ip netip.Addr) bool {
	if !ip.IsValid() {
		return true
	}
	ip = ip.WithZone("").Unmap() // Prefix.Contains never matches a zoned address
	list := specialV6
	switch {
	case ip.Is4():
		list = specialV4
	case sixToFour.Contains(ip):
		b := ip.As16()
		return specialPurpose(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
	}
	for _, p := range list {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
