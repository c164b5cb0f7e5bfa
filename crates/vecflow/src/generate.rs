//! `vecflow generate`: the man pages (`vecflow.1`, `vecflow-run.1`, one per subcommand) and
//! the bash and zsh completions, generated from the same clap definitions the program parses
//! with, so they never drift from it (`scripts/build-deb.sh` runs it to fill the package); and
//! the benchmarks' synthetic full routing tables as `ip -batch` input, to load a kernel with
//! (linux-cp's full-table test).

use anyhow::Context;
use clap_complete::Shell;
use dataplane::config::IpPrefix;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;

/// Options of `vecflow generate`.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

/// What to generate.
#[derive(clap::Subcommand)]
enum What {
    /// Write the man pages (section 1) into DIR.
    Man {
        /// Directory to write `vecflow.1` and `vecflow-SUBCOMMAND.1` into (created if missing).
        dir: PathBuf,
    },
    /// Print the completion script of SHELL to stdout.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: Shell,
    },
    /// Print a synthetic full table (the benchmarks' `ip4-1m`: 1 000 000 IPv4 prefixes, or
    /// `ip6-bgp`: 230 000 IPv6 ones) as `ip -batch` lines: `route add PREFIX via VIA dev DEV
    /// proto bgp`.
    Routes {
        /// `ip4-1m` or `ip6-bgp`.
        #[arg(value_parser = ["ip4-1m", "ip6-bgp"])]
        table: String,
        /// The gateway of every route (of the table's family).
        #[arg(long)]
        via: std::net::IpAddr,
        /// The device of every route.
        #[arg(long)]
        dev: String,
        /// Leave out the prefixes that overlap PREFIX (repeatable), e.g. the lab's own subnets.
        #[arg(long)]
        exclude: Vec<dataplane::config::IpPrefix>,
    },
}

/// Generates what `args` asks for from `cli`, the program's command definition.
pub fn run(args: Args, cli: clap::Command) -> anyhow::Result<()> {
    match args.what {
        What::Man { dir } => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            clap_mangen::generate_to(cli, &dir).with_context(|| format!("writing man pages into {}", dir.display()))?;
        }
        What::Completions { shell } => {
            let mut cli = cli;
            clap_complete::generate(shell, &mut cli, "vecflow", &mut std::io::stdout());
        }
        What::Routes { table, via, dev, exclude } => routes(&table, via, &dev, &exclude)?,
    }
    Ok(())
}

/// Prints table `name`'s routes through `via` on `dev`, but those overlapping `exclude`.
fn routes(name: &str, via: IpAddr, dev: &str, exclude: &[IpPrefix]) -> anyhow::Result<()> {
    use std::io::Write;
    let table: Vec<IpPrefix> = if name == "ip4-1m" {
        crate::bench::ip4_table().into_iter().map(|(p, len)| IpPrefix { addr: Ipv4Addr::from(p).into(), len }).collect()
    } else {
        crate::bench::ip6_bgp_table()
            .into_iter()
            .map(|(p, len)| IpPrefix { addr: Ipv6Addr::from(p).into(), len })
            .collect()
    };
    if table.first().is_some_and(|p| p.addr.is_ipv4() != via.is_ipv4()) {
        anyhow::bail!("--via {via}: a gateway of the table's family (IPv4 for ip4-1m, IPv6 for ip6-bgp)");
    }
    let overlaps = |p: &IpPrefix| exclude.iter().any(|x| x.contains(p.addr) || p.contains(x.addr));
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for p in table.iter().filter(|p| !overlaps(p)) {
        writeln!(out, "route add {p} via {via} dev {dev} proto bgp")?;
    }
    out.flush()?;
    Ok(())
}
