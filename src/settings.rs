//! Flags resolved into what the commands use: connection, scope and output policy.

use std::path::PathBuf;
use std::time::Duration;

use crate::cli::{ColorChoice, GlobalArgs};
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    Table,
    Wide,
    Json,
    Yaml,
    Name,
}

impl OutputFormat {
    pub fn parse(value: &str) -> Result<Self> {
        match value {
            "table" | "" => Ok(OutputFormat::Table),
            "wide" => Ok(OutputFormat::Wide),
            "json" => Ok(OutputFormat::Json),
            "yaml" => Ok(OutputFormat::Yaml),
            "name" => Ok(OutputFormat::Name),
            other => Err(Error::Usage(format!(
                "unknown output format \"{other}\"; use one of table, wide, json, yaml, name (-o)"
            ))),
        }
    }

    /// Machine-readable output: nothing but the data on stdout, never progress.
    pub fn is_structured(self) -> bool {
        matches!(
            self,
            OutputFormat::Json | OutputFormat::Yaml | OutputFormat::Name
        )
    }
}

/// How to reach the management cluster.
#[derive(Debug, Clone, Default)]
pub struct Connection {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    pub cluster: Option<String>,
    pub user: Option<String>,
    pub as_user: Option<String>,
    pub as_groups: Vec<String>,
    pub insecure_skip_tls_verify: bool,
    pub request_timeout: Option<Duration>,
    /// `-v 6` and above: one stderr line per request (method, URL, status, time; never bodies).
    pub log_requests: bool,
}

/// Which namespaces and Clusters a command looks at.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// `-n`, if given; otherwise the context's namespace is used, else `default`.
    pub namespace: Option<String>,
    pub all_namespaces: bool,
    pub selector: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub connection: Connection,
    pub scope: Scope,
    pub output: OutputFormat,
    pub color: ColorChoice,
    pub verbosity: u8,
}

/// kubectl's `--request-timeout`: `0` (none), whole seconds, or a duration like `1m30s`.
pub fn parse_request_timeout(value: &str) -> Result<Option<Duration>> {
    let invalid = || {
        Error::Usage(format!(
            "invalid --request-timeout \"{value}\": use a whole number of seconds or a number with a unit (e.g. 1s, 2m, 3h)"
        ))
    };
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Ok((seconds > 0).then(|| Duration::from_secs(seconds)));
    }
    let mut total = Duration::ZERO;
    let mut number = String::new();
    let mut chars = value.chars().peekable();
    let mut saw_unit = false;
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            number.push(c);
            continue;
        }
        let unit = if c == 'm' && chars.peek() == Some(&'s') {
            chars.next();
            "ms"
        } else {
            match c {
                'h' => "h",
                'm' => "m",
                's' => "s",
                _ => return Err(invalid()),
            }
        };
        let n: f64 = number.parse().map_err(|_| invalid())?;
        number.clear();
        saw_unit = true;
        total += Duration::from_secs_f64(match unit {
            "h" => n * 3600.0,
            "m" => n * 60.0,
            "s" => n,
            _ => n / 1000.0,
        });
    }
    if !number.is_empty() || !saw_unit {
        return Err(invalid());
    }
    Ok((!total.is_zero()).then_some(total))
}

impl Settings {
    pub fn from_args(args: &GlobalArgs) -> Result<Settings> {
        let output = OutputFormat::parse(args.output.as_deref().unwrap_or("table"))?;
        let request_timeout = match &args.request_timeout {
            Some(value) => parse_request_timeout(value)?,
            None => None,
        };
        if args.all_namespaces && args.namespace.is_some() {
            // kubectl lets -A win; say so rather than guess silently.
            return Err(Error::Usage(
                "--namespace and --all-namespaces exclude each other; pass one of them".into(),
            ));
        }
        Ok(Settings {
            connection: Connection {
                kubeconfig: args.kubeconfig.clone(),
                context: args.context.clone(),
                cluster: args.cluster.clone(),
                user: args.user.clone(),
                as_user: args.as_user.clone(),
                as_groups: args.as_group.clone(),
                insecure_skip_tls_verify: args.insecure_skip_tls_verify,
                request_timeout,
                log_requests: args.verbosity.unwrap_or(0) >= 6,
            },
            scope: Scope {
                namespace: args.namespace.clone(),
                all_namespaces: args.all_namespaces,
                selector: args.selector.clone(),
            },
            output,
            color: args.color,
            verbosity: args.verbosity.unwrap_or(0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_timeouts_like_kubectl() {
        assert_eq!(parse_request_timeout("0").unwrap(), None);
        assert_eq!(
            parse_request_timeout("30").unwrap(),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_request_timeout("2m").unwrap(),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            parse_request_timeout("1m30s").unwrap(),
            Some(Duration::from_secs(90))
        );
        assert_eq!(
            parse_request_timeout("500ms").unwrap(),
            Some(Duration::from_millis(500))
        );
        assert!(parse_request_timeout("soon").is_err());
        assert!(parse_request_timeout("5x").is_err());
    }

    #[test]
    fn output_formats() {
        assert_eq!(OutputFormat::parse("wide").unwrap(), OutputFormat::Wide);
        let err = OutputFormat::parse("xml").unwrap_err().to_string();
        assert_eq!(
            err,
            "unknown output format \"xml\"; use one of table, wide, json, yaml, name (-o)"
        );
    }
}
