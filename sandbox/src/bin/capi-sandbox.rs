//! capi-sandbox: in-memory Kubernetes API servers with Cluster API CRDs, for tests and demos.

use std::path::PathBuf;

use anyhow::Context;
use capi_sandbox::ApiServer;
use capi_sandbox::apiserver::{ServerOptions, write_kubeconfig};
use capi_sandbox::crds::Dialect;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "capi-sandbox",
    version,
    about = "In-memory Kubernetes API servers with Cluster API CRDs: the test substrate of kubectl-capi"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve one in-memory API server on 127.0.0.1 with the Cluster API CRDs and clusterctl's
    /// provider inventory installed, write a kubeconfig (context "sandbox") and serve until
    /// Ctrl-C, so real kubectl (and kubectl capi) can talk to it.
    Serve {
        /// Port to listen on (0: any free port).
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Where to write the kubeconfig.
        #[arg(long, default_value = "sandbox.kubeconfig")]
        kubeconfig: PathBuf,
        /// Which Cluster API CRD flavour to install.
        #[arg(long, value_enum, default_value_t = Dialect::V1beta2)]
        dialect: Dialect,
        /// Serve HTTPS with a self-signed CA (written into the kubeconfig).
        #[arg(long)]
        tls: bool,
        /// Require this bearer token (written into the kubeconfig).
        #[arg(long)]
        token: Option<String>,
    },
    /// Measure the API server's capacity: creates (sequential and concurrent, in-process) up to
    /// --objects stored objects, and LIST of --listed objects in-process and over HTTP.
    BenchApiserver {
        #[arg(long, default_value_t = 50_000)]
        objects: usize,
        #[arg(long, default_value_t = 10_000)]
        listed: usize,
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve {
            port,
            kubeconfig,
            dialect,
            tls,
            token,
        } => {
            let server = ApiServer::new(ServerOptions {
                tls,
                token,
                ..ServerOptions::default()
            });
            capi_sandbox::crds::install_with_inventory(&server, dialect)
                .context("installing the Cluster API CRDs")?;
            let serving = server.serve(port).await?;
            write_kubeconfig(&kubeconfig, &[serving.kubeconfig_entry("sandbox")])?;
            eprintln!("serving {} ({} CRDs)", serving.url, dialect.describe());
            eprintln!("kubeconfig written to {}", kubeconfig.display());
            eprintln!(
                "try: kubectl --kubeconfig {} api-resources",
                kubeconfig.display()
            );
            tokio::signal::ctrl_c().await?;
            Ok(())
        }
        Command::BenchApiserver {
            objects,
            listed,
            concurrency,
        } => {
            let options = capi_sandbox::bench::Options {
                objects,
                listed: listed.min(objects),
                concurrency,
            };
            let figures = capi_sandbox::bench::apiserver(&options).await?;
            let width = figures.iter().map(|f| f.what.len()).max().unwrap_or(0);
            for figure in figures {
                println!("{:width$}  {}", figure.what, figure.value);
            }
            Ok(())
        }
    }
}
