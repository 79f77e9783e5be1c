// Help texts of the `vera` command and its verbs.

const CLIENT_FLAGS = `
Client flags:
  --server URL[,URL...]  server(s) to talk to (default ws://127.0.0.1:1919, or $VERA_SERVER)
  --json                 machine-readable output: one JSON value per line
  --encoding E           frame encoding: msgpack (default) or json
  --timeout MS           give up connecting or waiting for a reply after MS ms (default 5000)
  --ca FILE              CA certificate (PEM) a wss:// server's certificate must chain to
                         (or $VERA_CA; without one, the system's CAs)
  --cert FILE            client certificate (PEM) for a server started with --client-ca
  --key FILE             its private key (or $VERA_CERT and $VERA_KEY)
  --token T              act as the user a token names (vera login; or $VERA_TOKEN)
  --user NAME            act as NAME (or $VERA_USER), the password read from
  --password-file FILE   this file or $VERA_PASSWORD (never a flag: ps shows flags)
  -h, --help             show this help`;

export const USAGE: Readonly<Record<string, string>> = {
  main: `Usage: vera <command> [flags]

Commands:
  start     run a server (one member of a cluster)
  dev       run a local cluster of N servers for trying Vera out
  push      push an item onto a list
  get       read a list
  ls        list the names below a path
  delete    delete an item
  watch     print changes to a list (or to every list below a path) until Ctrl-C
  put       set a list's value in one entry (replace it, or keep the newest N; compare-and-set)
  txn       compares and writes across lists, all or nothing, in one entry
  lease     grant, keep alive, revoke or show a lease (items that live as long as it does)
  paths     every non-empty list at or below a prefix, recursively, page by page
  journal   work queues: create, add, claim, done, release, flagged, ... ('vera journal --help')
  assign    node assignment (Tokenserver): service, node, user, retire, purge, ... ('vera assign --help')
  hibernate freeze a unit to the cold store, or list the Frozen ones ('vera hibernate --help')
  thaw      bring a Frozen unit back
  auth      turn authentication on or off, or show it ('vera auth --help')
  user      add, change, grant roles to, remove and list users
  role      add, grant permissions to, remove and list roles
  login     print a token for a user (for --token or $VERA_TOKEN)
  audit     print the audit log, or verify its hash chain
  completion  print a shell completion script: source <(vera completion bash), or zsh
  status    show a server's status
  member    list, add, promote or remove cluster members
  leader    hand leadership to another member (leader transfer ID)
  snapshot  save a backup of a running cluster, or restore one into a new data directory

Run 'vera <command> --help' for the flags of a command; 'vera --version' for the version.
Exit codes: 0 ok, 1 error from the server, 2 usage error, 3 cannot connect.`,

  completion: `Usage: vera completion bash|zsh

Prints a script that completes vera's commands and flags. Load it in your shell:
  source <(vera completion bash)      # in ~/.bashrc
  source <(vera completion zsh)       # in ~/.zshrc`,

  start: `Usage: vera start [flags]

Runs one member. With no flags: a single-node server on 127.0.0.1:1919, data in ./vera-data.

  --id ID                     member id, unique for all time (default n1)
  --data DIR                  data directory, created if missing (default ./vera-data)
  --client HOST:PORT          client port, WebSocket and HTTP (default 127.0.0.1:1919)
  --peer HOST:PORT            peer port (default 127.0.0.1:2919)
  --peers ID=HOST:PEERPORT/CLIENTPORT,...
                              initial members, this one included (default: just this one).
                              Without --client/--peer, this member's entry says where to listen.
  --secret S                  shared cluster secret (or $VERA_CLUSTER_SECRET);
                              required when there is more than one member, and to grow
                              a single member later (it also opens the peer port)
  --join                      join an existing cluster instead of starting one: a new
                              data directory starts with no configuration and learns it
                              from the cluster once 'vera member add' has added this id;
                              --peers lists existing members to contact (this one optional)
  --config FILE               JSON object with any of these settings, keyed by flag name
                              (e.g. {"id": "n2", "data-limit": "4MiB"}); flags win over it
  --log-level LEVEL           fatal, error, warn, info (default), debug, trace or silent
  --session-timeout-min DUR   shortest session timeout granted (default 1s)
  --session-timeout-max DUR   longest session timeout granted (default 60s)
  --data-limit SIZE           largest item data, as MessagePack (default 1MiB)
  --frame-limit SIZE          largest frame; bigger ones close the connection (default 16MiB)
  --sessions-max N            sessions a leader accepts (default 10000)
  --sessions-per-address N    sessions one client address may hold (default 1000)
  --watches-per-session N     watches one session may hold (default 1000)
  --items-per-session N       ephemeral items one session may own (default 100000)
  --bytes-per-session SIZE    bytes of ephemeral items one session may own (default 256MiB)
  --items-per-list N          items one list may hold (default 1000000)
  --disk-reserve SIZE         free space on the data disk below which pushes,
                              watches and new sessions are refused (default 64MiB)
  --inflight-per-connection N requests one connection may have pending (default 256)
  --connections-max N         client-port connections at once (default 10000, lowered to fit
                              the open-file limit so storage always has descriptors)
  --connections-per-address N client-port connections from one address (default 256)
  --hello-timeout DUR         a WebSocket that has not said hello by then is closed (default 10s)
  --connections-per-user N    with authentication on: connections one user may hold to a member (default 1000)
  --sessions-per-user N       sessions one user may hold in the cluster (default 1000)
  --watches-per-user N        watches one user may hold across its sessions (default 100000)
  --requests-per-user N       requests a second one user may send to a member (default 10000)
  --items-per-user N          list items one user may store in the cluster, unless set for it
                              or a role with vera user/role quota (default 1000000)
  --bytes-per-user SIZE       bytes of list items one user may store (default 1GiB)
  --metrics-need-auth         with authentication on, /metrics answers only users with read on 'cluster'
  --snapshot-entries N        compact the Raft log every N applied entries (default 10000)
  --snapshot-keep N           entries kept behind the applied index for lagging followers (default 1000)
  --hibernate-roots P,...     each child of these paths is a unit the leader hibernates when idle
  --hibernate-after D         how long a unit must go untouched first (default 30d)
  --allowed-origins O,...     web page origins (https://host:port, or *) whose requests are served
                              besides the member's own; a browser request from any other is refused
  --allowed-hosts H,...       host names (or *) the member answers to besides its own addresses,
                              localhost, IP addresses and its members' hosts; a request whose Host
                              names another is refused (DNS rebinding)
  --client-cert FILE          serve the client port over TLS (https and wss) with this PEM
  --client-key FILE           certificate and key; both are reloaded when they change on disk;
                              a plaintext request to the port is answered 400
  --client-ca FILE            ask clients for a certificate chaining to this CA and refuse one
                              that does not (the certificate's CN names the user)
  --client-cert-required      with --client-ca: refuse clients without a certificate
  --peer-cert FILE            TLS between members (wss) with this certificate and key,
  --peer-key FILE             presented both ways (needs --secret); reloaded like the client's
  --peer-ca FILE              mutual TLS: each member verifies the other's certificate against
                              this CA, and refuses a member whose certificate does not chain to it
  --tls-min-version V         oldest TLS version either port accepts: TLSv1.2 (default) or TLSv1.3
  --insecure                  let the client port listen beyond loopback although Vera has
                              no authentication yet (without it, such a start is refused)
  -h, --help                  show this help

Durations: 5000 (ms), 500ms, 5s, 2m, 1h, 7d, 1h30m. Sizes: 1048576, 512KiB, 1MiB.
Logs one JSON line per event on stdout; stops cleanly on SIGTERM or Ctrl-C.`,

  dev: `Usage: vera dev [flags]

Starts a local cluster for trying Vera out: N 'vera start' processes on 127.0.0.1
with consecutive ports and a generated secret. Prints the client URLs, streams
every node's log labelled with its id, and stops every node on Ctrl-C or SIGTERM.

  --nodes N            how many nodes, 1 to 7 (default 3)
  --data DIR           base data directory; node nK uses DIR/nK (default ./vera-data/dev)
  --client-port PORT   client port of n1; the others follow (default 1919)
  --peer-port PORT     peer port of n1; the others follow (default 2919)
  --fresh              remove the data of an earlier dev cluster in DIR first
  -h, --help           show this help

The ports are checked before anything starts. The generated secret is printed as
an 'export VERA_CLUSTER_SECRET=...' line and kept in DIR/cluster-secret, where
'vera member', 'vera leader' and 'vera snapshot save' look for it (with the
default DIR, run from the same directory) when no --secret or environment gives one.`,

  push: `Usage: vera push PATH DATA [flags]

Pushes DATA onto the list at PATH and prints the committed item. DATA is JSON
('{"a":1}', '42', '"text"'); \`-\` reads it from stdin and @FILE from a file (@@x
is the text @x). Text that is not JSON is refused unless --string takes it as a string.
Items are ephemeral by default: they are deleted when this command's session ends,
which is right after it prints, unless --hold keeps it open until Ctrl-C.

  --persistent         keep the item after the session ends
  --hold               keep the session (and the ephemeral item) until Ctrl-C
  --if-last-index N    only push if the list's newest item has index N (0 = empty list)
  --string             DATA is text: push it as a string (a final newline from stdin or a file dropped)
  --bytes              DATA is a binary value, byte for byte (base64 in JSON output)
${CLIENT_FLAGS}`,

  get: `Usage: vera get PATH [flags]

Prints the items of the list at PATH, oldest first.

  --stale              read from the first server that answers, as it has the list, over HTTP
                       (no session, so it works on a member with no leader or no quorum)
${CLIENT_FLAGS}`,

  ls: `Usage: vera ls PATH [flags]

Prints the names directly below PATH that lead to at least one non-empty list.
${CLIENT_FLAGS}`,

  delete: `Usage: vera delete PATH INDEX [flags]

Deletes the item with INDEX from the list at PATH. Ephemeral items of other
sessions cannot be deleted (FORBIDDEN).
${CLIENT_FLAGS}`,

  watch: `Usage: vera watch PATH [flags]

Prints the list at PATH, then one line per change, until Ctrl-C.

  --prefix             watch every list at or below PATH ('/' watches everything)
  --since I            first print what changed after index I (the last one you saw), then go live
${CLIENT_FLAGS}`,

  member: `Usage: vera member list|add|promote|remove [ID] [flags]

Changes who is in the cluster, one member at a time, through the leader.

  vera member list                                  members, roles, addresses, progress
  vera member add ID --peer HOST:PORT --client HOST:PORT
                                                    add ID as a non-voting learner; then
                                                    start it with 'vera start --id ID --join'
  vera member promote ID                            make a caught-up learner a voter
  vera member remove ID                             remove a member (the leader too)

  --server URL[,URL...]  any member(s) (default ws://127.0.0.1:1919, or $VERA_SERVER);
                       a follower's NOT_LEADER answer is followed to the leader; the
                       next URL is tried when one cannot be reached (for a change,
                       only when its connection was refused: nothing was sent)
  --secret S           the cluster secret (or $VERA_CLUSTER_SECRET, or the one a
                       'vera dev' run from here keeps in ./vera-data/dev/cluster-secret);
                       needed when the cluster has one, else only loopback may change members
  --json               print the server's JSON answer
  --timeout MS         give up after MS ms, retries included (default 5000)
  --ca FILE, --cert FILE, --key FILE
                       TLS: the CA of a wss:// server, a client certificate (as for 'vera push')
  -h, --help           show this help`,

  leader: `Usage: vera leader transfer ID [flags]

Hands leadership to voter ID and waits until it leads.

  --server URL         any member (default ws://127.0.0.1:1919, or $VERA_SERVER)
  --secret S           the cluster secret (or $VERA_CLUSTER_SECRET)
  --json               print the server's JSON answer
  --timeout MS         give up after MS ms (default 5000)
  --ca FILE, --cert FILE, --key FILE
                       TLS: the CA of a wss:// server, a client certificate (as for 'vera push')
  -h, --help           show this help`,

  status: `Usage: vera status [flags]

Fetches GET /v1/status from the server and prints it.

  --server URL[,URL...]  server(s) to ask, in turn until one answers (default
                       ws://127.0.0.1:1919, or $VERA_SERVER)
  --json               print the raw JSON
  --timeout MS         give up after MS ms (default 5000)
  --ca FILE, --cert FILE, --key FILE
                       TLS: the CA of a wss:// server, a client certificate (as for 'vera push')
  -h, --help           show this help`,

  snapshot: `Usage: vera snapshot save FILE [flags]
       vera snapshot restore FILE --data DIR [flags]

save: downloads a consistent backup from a running member (any member; it holds
every write acknowledged before the request), verifies its checksum and writes
FILE atomically. FILE is replaced only by a complete, verified backup.

  --server URL[,URL...]  member(s) to ask, in turn (default ws://127.0.0.1:1919, or $VERA_SERVER)
  --secret S             the cluster secret (or $VERA_CLUSTER_SECRET): a member started with
                         one hands a backup only to a caller who sends it; one without
                         a secret answers loopback callers only
  --timeout MS           give up when the server is silent for MS ms (default 120000;
                         it reads the whole state once before it answers)
  --json                 print the result as JSON
  --ca FILE, --cert FILE, --key FILE
                         TLS: the CA of an https:// member, a client certificate (as for 'vera push')

restore: verifies the whole of FILE, then creates a new single-member cluster in
DIR (absent or empty) holding its data, at the backup's index. A truncated or
corrupt FILE is refused and nothing is written. Start it afterwards with the
command it prints: 'vera start --id ID --data DIR --client ... --peer ...'.

  --data DIR             the new data directory (required)
  --id ID                member id of the new cluster's only member (default n1)
  --client HOST:PORT     the member's client address (default 127.0.0.1:1919)
  --peer HOST:PORT       the member's peer address (default 127.0.0.1:2919); both are
                         recorded in the new cluster's member list: start it with the same
  --json                 print the result as JSON

  -h, --help             show this help
Exit codes: 0 ok, 1 refused or failed (nothing written), 2 usage error, 3 cannot connect.`,
};
