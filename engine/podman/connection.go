package podman

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// The sources of a podmanEndpoint: what chose the service it names.
const (
	podmanSourceOption        = "option"               // Options.URI or Connection
	podmanSourceHostEnv       = "CONTAINER_HOST"       // the environment's service address
	podmanSourceConnectionEnv = "CONTAINER_CONNECTION" // the environment's connection
	podmanSourceSocket        = "local socket"         // nothing: a rootful or rootless socket
	podmanSourceDefault       = "default connection"   // `podman system connection default`
	podmanSourceService       = "started service"      // the `podman system service` the bridge started
)

// podmanConnectionsFile is the file `podman system connection add`
// writes (Podman 5), next to the user's containers.conf.
const podmanConnectionsFile = "podman-connections.json"

// podmanSystemConfs are the system-wide containers.conf files, read in
// this order before the user's, as containers/common/pkg/config reads
// them on Linux and macOS (the second with its .d directory). Tests
// replace them.
var podmanSystemConfs = []string{"/usr/share/containers/containers.conf", "/etc/containers/containers.conf"}

// A podmanEndpoint is where the Podman service is reached, found as the
// podman remote client finds it, and what chose it.
type podmanEndpoint struct {
	// URI is the service's address: unix://, tcp://, ssh://.
	URI string
	// Identity is the ssh key to reach an ssh:// URI with; "": the
	// bindings' default (CONTAINER_SSHKEY, ssh_config, the ssh agent).
	Identity string
	// Machine tells a connection `podman machine` made: its ssh://
	// address is complete and ~/.ssh/config is not read.
	Machine bool
	// Connection is the name of the Podman connection URI comes from;
	// "" when none named it.
	Connection string
	// Source is what chose URI, or the connection: one of the
	// podmanSource constants.
	Source string
	// SetBy says, for a connection, what named it (an environment
	// variable, or the key and file that made it the default) and, in
	// File, where it is defined.
	SetBy, File string
	// Warning is what the user should know about the choice, such as
	// CONTAINER_CONNECTION overriding CONTAINER_HOST; "" when nothing.
	Warning string
}

// where names the endpoint in errors: its address, and its connection
// when one named it.
func (ep podmanEndpoint) where() string {
	if ep.Connection == "" {
		return ep.URI
	}
	return fmt.Sprintf("%s (podman connection %q)", ep.URI, ep.Connection)
}

// logArgs are the attributes that describe the endpoint in a log line.
func (ep podmanEndpoint) logArgs() []any {
	args := []any{"uri", ep.URI}
	if ep.Connection != "" {
		args = append(args, "connection", ep.Connection)
	}
	if ep.Identity != "" {
		args = append(args, "identity", ep.Identity)
	}
	args = append(args, "source", ep.Source)
	if ep.SetBy != "" && ep.SetBy != ep.Source {
		args = append(args, "set_by", ep.SetBy)
	}
	if ep.File != "" {
		args = append(args, "file", ep.File)
	}
	return args
}

// resolvePodmanEndpoint finds the service that opts or the environment
// (read with getenv) name, by this precedence: Options.URI,
// Options.Connection, CONTAINER_CONNECTION, CONTAINER_HOST (with
// CONTAINER_SSHKEY as the identity). The options are podman's --url and
// --connection, which override the environment; CONTAINER_CONNECTION
// overrides CONTAINER_HOST as in the podman remote client (Podman 5,
// cmd/podman/root.go: setupRemoteConnection), with a Warning.
// named is false when none of them names one: New then tries the
// local sockets, then the default connection (podmanDefaultEndpoint).
// It reads the connection files only for a connection name, and connects
// to nothing. An error names the connection, the file at fault or the
// files looked in, and what named the connection.
func resolvePodmanEndpoint(opts *Options, getenv func(string) string) (ep podmanEndpoint, named bool, err error) {
	if opts == nil {
		opts = &Options{}
	}
	switch {
	case opts.URI != "" && opts.Connection != "":
		return podmanEndpoint{}, false, fmt.Errorf("podman: both a URI (%s) and a connection (%q) are set; set one", opts.URI, opts.Connection)
	case opts.URI != "":
		return podmanEndpoint{URI: opts.URI, Source: podmanSourceOption}, true, nil
	case opts.Connection != "":
		ep, err := podmanNamedConnection(opts.Connection, podmanSourceOption, "Options.Connection", getenv)
		return ep, err == nil, err
	}
	host := getenv("CONTAINER_HOST")
	if name := getenv("CONTAINER_CONNECTION"); name != "" {
		ep, err := podmanNamedConnection(name, podmanSourceConnectionEnv, "CONTAINER_CONNECTION", getenv)
		if err == nil && host != "" {
			ep.Warning = fmt.Sprintf("CONTAINER_CONNECTION=%q overrides CONTAINER_HOST=%s, as it does for podman", name, host)
		}
		return ep, err == nil, err
	}
	if host != "" {
		ep := podmanEndpoint{URI: host, Source: podmanSourceHostEnv}
		if strings.HasPrefix(host, "ssh://") {
			ep.Identity = getenv("CONTAINER_SSHKEY")
		}
		return ep, true, nil
	}
	return podmanEndpoint{}, false, nil
}

// podmanNamedConnection returns the endpoint of the connection called
// name, which source (setBy, as errors say it) named.
func podmanNamedConnection(name, source, setBy string, getenv func(string) string) (podmanEndpoint, error) {
	conns, err := loadPodmanConnections(getenv)
	if err != nil {
		return podmanEndpoint{}, fmt.Errorf("podman connection %q: %w (set by %s)", name, err, setBy)
	}
	return conns.endpoint(name, source, setBy)
}

// podmanDefaultEndpoint returns the default connection, as `podman
// system connection default` (or `podman machine init`) set it: the
// Connection.Default of podman-connections.json, else [engine]
// active_service of containers.conf. ok is false when none is set.
func podmanDefaultEndpoint(getenv func(string) string) (ep podmanEndpoint, ok bool, err error) {
	conns, err := loadPodmanConnections(getenv)
	if err != nil {
		return podmanEndpoint{}, false, fmt.Errorf("podman default connection: %w", err)
	}
	if conns.def == "" {
		return podmanEndpoint{}, false, nil
	}
	ep, err = conns.endpoint(conns.def, podmanSourceDefault, conns.defSetBy)
	return ep, err == nil, err
}

// A podmanDestination is one connection as the files store it.
type podmanDestination struct {
	URI       string `toml:"uri"`
	Identity  string `toml:"identity"`
	IsMachine bool   `toml:"is_machine"`
}

// A podmanConnection is a connection and the file defining it.
type podmanConnection struct {
	podmanDestination
	file string
}

// podmanConnections are the connections the podman remote client knows,
// read from the files it reads them from (see loadPodmanConnections).
type podmanConnections struct {
	// jsonFile is podman-connections.json ("" when there is no home
	// directory to find it in); jsonExists tells whether it exists.
	jsonFile   string
	jsonExists bool
	// confs are the containers.conf files read, in order; looked are
	// all those looked for.
	confs, looked []string
	// byJSON are the connections of jsonFile, byConf those of the
	// [engine.service_destinations] tables of confs, a later file's
	// replacing an earlier's of the same name.
	byJSON, byConf map[string]podmanConnection
	// def is the default connection's name; defSetBy what set it.
	def, defSetBy string
}

// loadPodmanConnections reads the connections the podman remote client
// (Podman 5, containers/common/pkg/config) knows, from exactly these
// files:
//
//   - podman-connections.json, as `podman system connection add`
//     writes it: $PODMAN_CONNECTIONS_CONF, else
//     $XDG_CONFIG_HOME/containers/podman-connections.json, else
//     ~/.config/containers/podman-connections.json (root's too: there is
//     no system-wide one). Keys: Connection.Default and
//     Connection.Connections.NAME.{URI,Identity,IsMachine}; Farm is not
//     read.
//   - containers.conf, as Podman before 5 wrote connections: the keys
//     [engine] active_service and [engine.service_destinations.NAME]
//     uri, identity, is_machine, of $CONTAINERS_CONF alone when set,
//     else of /usr/share/containers/containers.conf,
//     /etc/containers/containers.conf, the *.conf of
//     /etc/containers/containers.conf.d, the user's
//     ($XDG_CONFIG_HOME/containers/containers.conf, else
//     ~/.config/containers/containers.conf) and the *.conf of its .d
//     directory; then $CONTAINERS_CONF_OVERRIDE. A later file's value
//     replaces an earlier's.
//
// A connection of podman-connections.json hides one of containers.conf
// of the same name; its Connection.Default wins over active_service. A
// missing file is no connection (but a missing $CONTAINERS_CONF or
// $CONTAINERS_CONF_OVERRIDE is an error, as for podman); a file that
// cannot be read or parsed is an error naming it. The deprecated
// remote_uri and remote_identity keys, which Podman 5 ignores, are not
// read.
func loadPodmanConnections(getenv func(string) string) (*podmanConnections, error) {
	c := &podmanConnections{byJSON: map[string]podmanConnection{}, byConf: map[string]podmanConnection{}}
	userConf := podmanUserConf(getenv)
	c.jsonFile = getenv("PODMAN_CONNECTIONS_CONF")
	if c.jsonFile == "" && userConf != "" {
		c.jsonFile = filepath.Join(filepath.Dir(userConf), podmanConnectionsFile)
	}
	var jsonDefault string
	if c.jsonFile != "" {
		var err error
		jsonDefault, err = c.readJSON()
		if err != nil {
			return nil, err
		}
	}

	confs, err := podmanConfFiles(getenv, userConf)
	if err != nil {
		return nil, err
	}
	var activeFrom string
	for _, f := range confs {
		var conf struct {
			Engine struct {
				ActiveService       string                       `toml:"active_service"`
				ServiceDestinations map[string]podmanDestination `toml:"service_destinations"`
			} `toml:"engine"`
		}
		c.looked = append(c.looked, f.path)
		md, err := toml.DecodeFile(f.path, &conf)
		switch {
		case errors.Is(err, fs.ErrNotExist) && f.env == "":
			continue
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("%s=%s: no such file", f.env, f.path)
		case err != nil:
			return nil, podmanFileError(f.path, err)
		}
		c.confs = append(c.confs, f.path)
		for name, d := range conf.Engine.ServiceDestinations {
			c.byConf[name] = podmanConnection{podmanDestination: d, file: f.path}
		}
		if md.IsDefined("engine", "active_service") {
			c.def, activeFrom = conf.Engine.ActiveService, f.path
		}
	}
	switch {
	case jsonDefault != "":
		c.def, c.defSetBy = jsonDefault, "Connection.Default in "+c.jsonFile
	case c.def != "":
		c.defSetBy = "active_service in " + activeFrom
	}
	return c, nil
}

// readJSON reads jsonFile's connections into byJSON and returns its
// default connection. A missing file has none.
func (c *podmanConnections) readJSON() (def string, err error) {
	f, err := os.Open(c.jsonFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", podmanFileError(c.jsonFile, err)
	}
	defer f.Close()
	c.jsonExists = true
	var file struct {
		Connection struct {
			Default     string
			Connections map[string]struct {
				URI       string
				Identity  string
				IsMachine bool
			}
		}
	}
	// A decoder, as Podman reads the file: what follows the first JSON
	// value is ignored.
	if err := json.NewDecoder(f).Decode(&file); err != nil {
		return "", podmanFileError(c.jsonFile, err)
	}
	for name, d := range file.Connection.Connections {
		c.byJSON[name] = podmanConnection{podmanDestination: podmanDestination{URI: d.URI, Identity: d.Identity,
			IsMachine: d.IsMachine}, file: c.jsonFile}
	}
	return file.Connection.Default, nil
}

// podmanFileError says what is wrong with a connections or configuration
// file, naming it once.
func podmanFileError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("reading %s: %w", pe.Path, pe.Err)
	}
	return fmt.Errorf("parsing %s: %w", path, err)
}

// endpoint returns the endpoint of the connection called name, which
// source (setBy, as errors say it) named.
func (c *podmanConnections) endpoint(name, source, setBy string) (podmanEndpoint, error) {
	conn, ok := c.byJSON[name]
	if !ok {
		conn, ok = c.byConf[name]
	}
	if !ok {
		return podmanEndpoint{}, fmt.Errorf("podman connection %q: not found in %s (set by %s)", name, c.lookedIn(), setBy)
	}
	if conn.URI == "" {
		return podmanEndpoint{}, fmt.Errorf("podman connection %q: %s gives it no URI (set by %s)", name, conn.file, setBy)
	}
	return podmanEndpoint{URI: conn.URI, Identity: conn.Identity, Machine: conn.IsMachine, Connection: name,
		Source: source, SetBy: setBy, File: conn.file}, nil
}

// lookedIn names the files a connection was looked for in, for errors.
func (c *podmanConnections) lookedIn() string {
	var parts []string
	switch {
	case c.jsonFile == "":
		parts = append(parts, podmanConnectionsFile+" (no home directory to find it in)")
	case !c.jsonExists:
		parts = append(parts, c.jsonFile+" (which does not exist)")
	default:
		parts = append(parts, c.jsonFile)
	}
	if len(c.confs) > 0 {
		parts = append(parts, "[engine.service_destinations] of "+strings.Join(c.confs, ", "))
	} else {
		parts = append(parts, "containers.conf (none of "+strings.Join(c.looked, ", ")+" exists)")
	}
	return strings.Join(parts, " nor in ")
}

// A podmanConf is a containers.conf file to read. One an environment
// variable (env) names must exist.
type podmanConf struct {
	path string
	env  string
}

// podmanConfFiles lists the containers.conf files Podman reads, in
// order (see loadPodmanConnections); userConf is the user's, "" when
// there is no home directory.
func podmanConfFiles(getenv func(string) string, userConf string) ([]podmanConf, error) {
	var files []podmanConf
	if path := getenv("CONTAINERS_CONF"); path != "" {
		files = append(files, podmanConf{path: path, env: "CONTAINERS_CONF"})
	} else {
		for i, path := range podmanSystemConfs {
			files = append(files, podmanConf{path: path})
			if i == len(podmanSystemConfs)-1 {
				d, err := podmanConfDir(path + ".d")
				if err != nil {
					return nil, err
				}
				files = append(files, d...)
			}
		}
		if userConf != "" {
			files = append(files, podmanConf{path: userConf})
			d, err := podmanConfDir(userConf + ".d")
			if err != nil {
				return nil, err
			}
			files = append(files, d...)
		}
	}
	if path := getenv("CONTAINERS_CONF_OVERRIDE"); path != "" {
		files = append(files, podmanConf{path: path, env: "CONTAINERS_CONF_OVERRIDE"})
	}
	return files, nil
}

// podmanConfDir lists the *.conf files of dir, sorted; none when dir
// does not exist.
func podmanConfDir(dir string) ([]podmanConf, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, podmanFileError(dir, err)
	}
	var files []podmanConf
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".conf") {
			files = append(files, podmanConf{path: filepath.Join(dir, e.Name())})
		}
	}
	slices.SortFunc(files, func(a, b podmanConf) int { return cmp.Compare(a.path, b.path) })
	return files, nil
}

// podmanUserConf returns the user's containers.conf:
// $XDG_CONFIG_HOME/containers/containers.conf, else
// ~/.config/containers/containers.conf; "" when there is no home
// directory either.
func podmanUserConf(getenv func(string) string) string {
	if dir := getenv("XDG_CONFIG_HOME"); dir != "" {
		return filepath.Join(dir, "containers", "containers.conf")
	}
	home := lifecycle.HomeDir(getenv)
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".config", "containers", "containers.conf")
}

// findPodman tries, in order, where New looks for the service,
// calling try on each until one connects, and returns that endpoint
// (nil when none did): the service opts or the environment name (see
// resolvePodmanEndpoint) alone; else each of sockets (the local
// sockets), then the default connection. tried says why each failed,
// as New's error does; mayStart tells whether nothing named a
// service, so that New may start one. The default connection is
// read only when no socket connects: a broken file then is one more
// reason in tried, and a warning. err is a named connection that cannot
// be looked up, which New returns as is. Which endpoint was chosen
// and why is logged.
func findPodman(opts *Options, getenv func(string) string, sockets []string, log *slog.Logger,
	try func(podmanEndpoint) error) (found *podmanEndpoint, tried []string, mayStart bool, err error) {
	ep, named, err := resolvePodmanEndpoint(opts, getenv)
	if err != nil {
		return nil, nil, false, err
	}
	attempt := func(ep podmanEndpoint) bool {
		if err := try(ep); err != nil {
			tried = append(tried, ep.where()+": "+err.Error())
			return false
		}
		return true
	}
	if named {
		if ep.Warning != "" {
			log.Warn("podman service address", "warning", ep.Warning)
		}
		log.Info("podman service address", ep.logArgs()...)
		if attempt(ep) {
			return &ep, nil, false, nil
		}
		return nil, tried, false, nil
	}
	for _, uri := range sockets {
		ep := podmanEndpoint{URI: uri, Source: podmanSourceSocket}
		if attempt(ep) {
			log.Info("podman service address", ep.logArgs()...)
			return &ep, nil, false, nil
		}
	}
	def, ok, err := podmanDefaultEndpoint(getenv)
	switch {
	case err != nil:
		log.Warn("podman default connection", "error", err)
		tried = append(tried, err.Error())
	case ok:
		log.Info("podman service address", append(def.logArgs(), "why", "no local socket answers")...)
		if attempt(def) {
			return &def, nil, false, nil
		}
	}
	return nil, tried, true, nil
}

// A Target is where New looks for the Podman service, as
// Endpoint reports it.
type Target struct {
	// Address is the service's address when Options.URI,
	// CONTAINER_CONNECTION's connection or CONTAINER_HOST names it; ""
	// when none does: New then tries the local sockets, then the
	// default connection.
	Address string
	// Connection is the name of the Podman connection Address comes
	// from; "" when none.
	Connection string
	// DefaultAddress and DefaultConnection are the address and name of
	// the default connection, tried when Address is "" and no local
	// socket answers; "" when none is configured.
	DefaultAddress, DefaultConnection string
}

// Endpoint returns where New looks for the Podman service
// when its Options.URI is uri and its Connection is connection, reading the environment with getenv
// (nil: os.Getenv) and the podman client's connection files (see
// Options.URI). It connects to nothing; an error is one New
// would return, such as a connection that does not exist, or, when
// nothing names the service, what is wrong with the default connection
// (which New logs and goes on without).
func Endpoint(uri, connection string, getenv func(string) string) (Target, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	ep, named, err := resolvePodmanEndpoint(&Options{URI: uri, Connection: connection}, getenv)
	if err != nil || named {
		return Target{Address: ep.URI, Connection: ep.Connection}, err
	}
	def, _, err := podmanDefaultEndpoint(getenv)
	return Target{DefaultAddress: def.URI, DefaultConnection: def.Connection}, err
}
