#!/bin/sh
# Bootstrap the Railyard agent on a new node: install the railyard-agent package (from a .deb
# or an apt repository), enroll the node with a token and the controller's CA fingerprint, and
# enable and start railyard-agent.service. Idempotent: each step is checked first, and a run on
# a node that is installed, enrolled and running changes nothing and says so (the token is not
# used again). Shipped as /usr/share/railyard/bootstrap-agent.sh in railyard-controller; see
# docs/operations.md, "Bootstrapping a node".
set -eu

PROG=bootstrap-agent.sh
STATE=/var/lib/railyard/agent
PKG=railyard-agent
AGENT=/usr/bin/railyard-agent
APT_LIST=/etc/apt/sources.list.d/railyard.list
APT_KEYRING=/etc/apt/keyrings/railyard.gpg

usage() {
	cat <<EOF
usage: $PROG --controller HOST:PORT --token TOKEN|- --ca-fingerprint sha256:HEX
       (--deb FILE | --apt [--apt-source 'deb [signed-by=$APT_KEYRING] URL SUITE COMPONENT'
                            [--apt-keyring FILE]])
       [--hostname NAME] [--no-start]

  --controller      the controller's gRPC address, as agents reach it (port 7443 by default)
  --token           an enrollment token (railyard enrollment-token create); - reads it from stdin
                    (a token given here is in this script's command line, which every local
                    user can read while it runs: prefer -). It is handed to railyard-agent
                    enroll on a pipe (--token-file -), never on its command line.
  --ca-fingerprint  the controller's CA fingerprint, printed with the token
  --deb FILE        install railyard-agent from this package (its dependencies from apt)
  --apt             install railyard-agent from the apt sources; --apt-source writes one to
                    $APT_LIST first, --apt-keyring copies its key to $APT_KEYRING
                    (a source with [trusted=yes] or an http:// URL is warned about)
  --hostname        the node's name at the controller (default: the agent's own host name)
  --no-start        enable the service but do not start it (an image being prepared)

Exit status: 0 done or nothing to change, 1 a step failed, 2 bad arguments.
EOF
}

say() { echo "$PROG: $*"; }
warn() { echo "$PROG: warning: $*" >&2; }
die() { echo "$PROG: $*" >&2; exit 1; }
bad() {
	echo "$PROG: $*" >&2
	echo "(--help for usage)" >&2
	exit 2
}

controller='' token='' fp='' deb='' apt=0 apt_source='' apt_keyring='' hostname='' start=1
while [ $# -gt 0 ]; do
	opt=$1
	case $opt in
	--help | -h)
		usage
		exit 0
		;;
	--apt)
		apt=1
		shift
		continue
		;;
	--no-start)
		start=0
		shift
		continue
		;;
	--controller | --token | --ca-fingerprint | --deb | --apt-source | --apt-keyring | --hostname)
		[ $# -ge 2 ] || bad "$opt needs a value"
		val=$2
		shift 2
		;;
	--*=*)
		# --opt=value: split, then parse as --opt value.
		name=${opt%%=*}
		shift
		set -- "$name" "${opt#*=}" "$@"
		continue
		;;
	*) bad "unknown argument '$opt'" ;;
	esac
	case $opt in
	--controller) controller=$val ;;
	--token) token=$val ;;
	--ca-fingerprint) fp=$val ;;
	--deb) deb=$val ;;
	--apt-source) apt_source=$val ;;
	--apt-keyring) apt_keyring=$val ;;
	--hostname) hostname=$val ;;
	esac
done

# --- arguments, all checked before anything is changed ---
[ -n "$controller" ] || bad "--controller HOST:PORT is required"
[ -n "$token" ] || bad "--token is required (- reads it from stdin)"
[ -n "$fp" ] || bad "--ca-fingerprint is required (printed by railyard enrollment-token create)"
port=${controller##*:}
host=${controller%:*}
case $port in
'' | *[!0-9]* | ??????*) bad "--controller '$controller' is not HOST:PORT with a port of 1-65535" ;;
esac
if [ -z "$host" ] || [ "$host" = "$controller" ] || [ "$port" -lt 1 ] || [ "$port" -gt 65535 ]; then
	bad "--controller '$controller' is not HOST:PORT with a port of 1-65535"
fi
# The fingerprint as railyard-agent reads it: sha256: (or openssl's "SHA256 Fingerprint="),
# then 32 bytes of hex, colons between them allowed.
hex=$(printf '%s' "$fp" | sed -e 's/^[Ss][Hh][Aa]256:\|^[Ss][Hh][Aa]256 [Ff]ingerprint=//' -e 's/://g' |
	tr 'A-F' 'a-f')
case $hex in
*[!0-9a-f]*) hex= ;;
esac
[ ${#hex} -eq 64 ] || bad "--ca-fingerprint '$fp' is not sha256: and 64 hex digits"
if [ -n "$deb" ] && [ "$apt" = 1 ]; then
	bad "--deb and --apt: choose one"
fi
[ -n "$deb" ] || [ "$apt" = 1 ] || bad "where from: --deb FILE or --apt"
if { [ -n "$apt_source" ] || [ -n "$apt_keyring" ]; } && [ "$apt" = 0 ]; then
	bad "--apt-source and --apt-keyring go with --apt"
fi
if [ -n "$apt_source" ]; then
	case $apt_source in
	"deb "* | "deb	"*) ;;
	*) bad "--apt-source '$apt_source' is not a one-line 'deb URL SUITE COMPONENT...' entry" ;;
	esac
	# Not refused (an offline mirror on a local path may be trusted=yes on purpose), but said:
	# either lets whoever answers for the source install what they like as root on this node.
	case $apt_source in
	*trusted=yes*)
		warn "--apt-source has [trusted=yes]: apt will not check the packages' signatures;" \
			"use [signed-by=$APT_KEYRING] with --apt-keyring"
		;;
	esac
	case $apt_source in
	*http://*)
		warn "--apt-source fetches over http://: the archive's signature is all that guards" \
			"the packages (none with trusted=yes); prefer https://"
		;;
	esac
fi
if [ -n "$apt_keyring" ] && [ ! -r "$apt_keyring" ]; then
	bad "--apt-keyring $apt_keyring: no such readable file"
fi
if [ -n "$hostname" ]; then
	case $hostname in
	*[!A-Za-z0-9.-]* | -*) bad "--hostname '$hostname' is not a host name" ;;
	esac
fi
[ "$(id -u)" -eq 0 ] || die "must run as root (it installs a package and enrolls the node)"
if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
	die "dpkg and apt-get not found: the agent is packaged for Debian 12"
fi
if [ -n "$deb" ]; then
	[ -r "$deb" ] || bad "--deb $deb: no such readable file"
	deb_pkg=$(dpkg-deb -f "$deb" Package 2>/dev/null) || bad "--deb $deb is not a Debian package"
	[ "$deb_pkg" = "$PKG" ] || bad "--deb $deb is $deb_pkg, not $PKG"
	deb_ver=$(dpkg-deb -f "$deb" Version)
	case $deb in
	/*) ;;
	*) deb=$PWD/$deb ;; # apt-get install takes a path, not a name
	esac
fi
if [ "$token" = "-" ]; then
	IFS= read -r token || true
	[ -n "$token" ] || bad "--token -: nothing on stdin"
else
	warn "--token on the command line: any local user can read it while this runs (ps);" \
		"next time give --token - and the token on stdin"
fi

changed=0
export DEBIAN_FRONTEND=noninteractive

installed_version() {
	dpkg-query -W -f '${db:Status-Status} ${Version}' "$PKG" 2>/dev/null |
		sed -n 's/^installed //p'
}

# --- 1. the package ---
if [ "$apt" = 1 ]; then
	if [ -n "$apt_keyring" ]; then
		if cmp -s "$apt_keyring" "$APT_KEYRING"; then
			say "apt key $APT_KEYRING is in place"
		else
			install -d -m 0755 "$(dirname "$APT_KEYRING")"
			install -m 0644 "$apt_keyring" "$APT_KEYRING"
			say "installed the apt key as $APT_KEYRING"
			changed=1
		fi
	fi
	if [ -n "$apt_source" ]; then
		if [ "$(cat "$APT_LIST" 2>/dev/null)" = "$apt_source" ]; then
			say "apt source $APT_LIST is in place"
		else
			printf '%s\n' "$apt_source" >"$APT_LIST.tmp"
			mv "$APT_LIST.tmp" "$APT_LIST"
			say "wrote $APT_LIST"
			changed=1
		fi
	fi
fi
cur=$(installed_version)
if [ -n "$deb" ] && [ -n "$cur" ] && dpkg --compare-versions "$cur" ge "$deb_ver"; then
	if [ "$cur" = "$deb_ver" ]; then
		say "$PKG $cur is installed"
	else
		say "$PKG $cur is installed, newer than $deb ($deb_ver): not downgrading"
	fi
elif [ "$apt" = 1 ] && [ -n "$cur" ] && [ "$changed" = 0 ]; then
	say "$PKG $cur is installed (upgrades: apt-get install --only-upgrade $PKG)"
else
	say "installing $PKG${deb:+ from $deb}"
	# apt's output, kept when something fails: a file of our own (mktemp: a new name, mode
	# 0600), never a fixed path in a world-writable directory that another user could have
	# made a link there.
	aptlog=$(mktemp "${TMPDIR:-/tmp}/railyard-bootstrap-apt.XXXXXX") ||
		die "cannot make a temporary file for apt's output"
	# An archive that does not answer is not the end: the lists there are may do (a node of an
	# offline cluster with a partial mirror); apt-get install says when they do not.
	apt-get update -q >"$aptlog" 2>&1 ||
		say "apt-get update failed ($aptlog): trying with the lists there are"
	# Unattended: a configuration file already there (/etc/railyard/agent.env of an image) is
	# kept, the package's own is put beside it as agent.env.dpkg-dist.
	apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-confdef \
		-o Dpkg::Options::=--force-confold "${deb:-$PKG}" >>"$aptlog" 2>&1 ||
		die "apt-get install ${deb:-$PKG} failed ($aptlog)"
	cur=$(installed_version)
	[ -n "$cur" ] || die "$PKG is not installed after apt-get install ($aptlog)"
	say "installed $PKG $cur"
	rm -f "$aptlog"
	changed=1
fi

# --- 2. enrollment (node.crt is written last by enroll: its presence means enrolled) ---
# The SHA-256 of the CA certificate's DER, as the controller prints it: sha256:HEX.
ca_hex() {
	sed -n '/-----BEGIN CERTIFICATE-----/,/-----END CERTIFICATE-----/p' "$1" | sed '1d;$d' |
		base64 -d | sha256sum | cut -d' ' -f1
}
node_field() { sed -n "s/^$1 = //p" "$STATE/agent.conf" 2>/dev/null; }
if [ -e "$STATE/node.crt" ]; then
	have=$(ca_hex "$STATE/ca.crt" 2>/dev/null || true)
	if [ "$have" != "$hex" ]; then
		die "this node is enrolled with another controller (CA sha256:${have:-unreadable}, not" \
			"sha256:$hex). To move it: systemctl stop $PKG; rm -rf $STATE; then run this again"
	fi
	say "enrolled as node $(node_field node_id) in cluster $(node_field cluster)" \
		"with $(node_field controller) (the token is not used)"
else
	say "enrolling with $controller"
	# The token on a pipe (printf is the shell's own: no process has it in its arguments).
	set -- enroll --controller "$controller" --token-file - --ca-fingerprint "$fp"
	[ -z "$hostname" ] || set -- "$@" --hostname "$hostname"
	printf '%s\n' "$token" | "$AGENT" "$@" ||
		die "railyard-agent enroll failed (above); nothing else was changed"
	changed=1
fi

# --- 3. the service ---
if [ ! -d /run/systemd/system ]; then
	say "systemd is not running here: start the agent with '$AGENT run' (the unit starts it at boot)"
else
	if systemctl --quiet is-enabled "$PKG.service" 2>/dev/null; then
		say "$PKG.service is enabled"
	else
		systemctl --quiet enable "$PKG.service" || die "systemctl enable $PKG.service failed"
		say "enabled $PKG.service"
		changed=1
	fi
	if [ "$start" = 0 ]; then
		say "not starting $PKG.service (--no-start)"
	elif systemctl --quiet is-active "$PKG.service"; then
		say "$PKG.service is running"
	else
		systemctl start "$PKG.service" ||
			die "systemctl start $PKG.service failed (journalctl -u $PKG.service)"
		systemctl --quiet is-active "$PKG.service" ||
			die "$PKG.service did not stay up (journalctl -u $PKG.service)"
		say "started $PKG.service"
		changed=1
	fi
fi

if [ "$changed" = 0 ]; then
	say "nothing to change: $PKG $cur is installed and the node enrolled"
else
	say "done"
fi
