use std::io::Read;

use doppler_engine::store::parse_sha256;
use reqwest::{
    blocking::{Client, Response},
    header::{self, HeaderMap},
    redirect, StatusCode, Url,
};

use super::{
    listing::TreeEntry,
    repo_path::{check_revision, endpoint_url, file_segments, parse_endpoint, repo_segments},
    HubConfig, HubError, HubModel, ModelFormat, RepoFile,
};

/// Listings are JSON of a few hundred bytes per entry; far more is not a listing.
const MAX_LISTING_BYTES: u64 = 32 << 20;
/// The Hub answers `resolve` with one redirect (to its CDN), two for a renamed repository.
const MAX_REDIRECTS: usize = 5;
/// A tree is paged (1000 entries a page); a GGUF repository has a few dozen files.
const MAX_TREE_PAGES: usize = 100;
pub const MAX_SEARCH_RESULTS: usize = 100;

/// A client of one Hub endpoint. Blocking: each call waits for its answer, giving up when
/// nothing arrives for the configured stall timeout.
pub struct HubClient {
    config: HubConfig,
    endpoint: Url,
    http: Client,
}

/// A download's answer, its body not read yet.
pub struct OpenedFile {
    /// The body; reading it fails when no byte arrives for the stall timeout.
    pub body: Response,
    /// Where the body starts in the file: 0, or the start of the range asked for.
    pub start: u64,
    /// The file's whole size as this answer states it (`Content-Length` of a 200, the total
    /// of a 206's `Content-Range`).
    pub total: Option<u64>,
    /// The sha256 the `resolve` redirect announced (`X-Linked-Etag`), for LFS files.
    pub linked_sha256: Option<String>,
    /// The size the `resolve` redirect announced (`X-Linked-Size`).
    pub linked_size: Option<u64>,
}

impl HubClient {
    pub fn new(config: HubConfig) -> Result<HubClient, HubError> {
        let endpoint = parse_endpoint(&config.endpoint)?;
        let http = Client::builder()
            .user_agent(concat!("doppler/", env!("CARGO_PKG_VERSION")))
            // Redirects are followed by hand: the `resolve` redirect carries the file's
            // sha256 and size, and the token must not leave the Hub's host.
            .redirect(redirect::Policy::none())
            .timeout(config.stall_timeout)
            .build()
            .map_err(|source| HubError::Client { source })?;
        Ok(HubClient { config, endpoint, http })
    }

    pub fn config(&self) -> &HubConfig {
        &self.config
    }

    /// The GGUF and safetensors repositories whose id matches `query`, most downloaded first,
    /// each with the formats it holds. The Hub's `filter` ANDs the tags it is given, so each
    /// format is a search of its own; a repository both find is listed once, with both.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<HubModel>, HubError> {
        let mut models: Vec<HubModel> = Vec::new();
        for format in ModelFormat::ALL {
            let mut url = endpoint_url(&self.endpoint, ["api", "models"]);
            url.query_pairs_mut()
                .append_pair("search", query)
                .append_pair("filter", format.tag())
                .append_pair("sort", "downloads")
                .append_pair("direction", "-1")
                .append_pair("limit", &limit.clamp(1, MAX_SEARCH_RESULTS).to_string());
            let response = self.get(&url, None, "the model search")?;
            let found: Vec<HubModel> = read_json(response, &url)?;
            for model in found {
                match models.iter_mut().find(|known| known.id == model.id) {
                    Some(known) => known.formats.push(format),
                    None => models.push(HubModel { formats: vec![format], ..model }),
                }
            }
        }
        // A stable sort: equal counts keep the Hub's order, GGUF results first.
        models.sort_by_key(|model| std::cmp::Reverse(model.downloads.unwrap_or(0)));
        models.truncate(limit);
        Ok(models)
    }

    /// Every file of `repo` at `revision`, with sizes and (for LFS files) sha256s.
    pub fn list_files(&self, repo: &str, revision: &str) -> Result<Vec<RepoFile>, HubError> {
        check_revision(revision)?;
        let mut segments = vec!["api", "models"];
        segments.extend(repo_segments(repo)?);
        segments.extend(["tree", revision]);
        let mut url = endpoint_url(&self.endpoint, segments);
        url.query_pairs_mut().append_pair("recursive", "true");
        let mut files = Vec::new();
        for _ in 0..MAX_TREE_PAGES {
            let response = self.get(&url, Some(repo), &format!("{repo} at revision {revision}"))?;
            let next = next_page(response.headers(), &url);
            let entries: Vec<TreeEntry> = read_json(response, &url)?;
            for entry in entries.into_iter().filter(|entry| entry.kind == "file") {
                files.push(repo_file(entry, &url)?);
            }
            match next {
                Some(next) => url = next,
                None => return Ok(files),
            }
        }
        Err(HubError::BadResponse {
            url: url.to_string(),
            reason: format!("more than {MAX_TREE_PAGES} pages of files"),
        })
    }

    /// Starts downloading `path` of `repo` at `revision` from byte `offset` on, following
    /// the `resolve` redirects.
    pub fn open_file(
        &self,
        repo: &str,
        revision: &str,
        path: &str,
        offset: u64,
    ) -> Result<OpenedFile, HubError> {
        check_revision(revision)?;
        let mut segments = repo_segments(repo)?;
        segments.extend(["resolve", revision]);
        segments.extend(file_segments(path)?);
        let mut url = endpoint_url(&self.endpoint, segments);
        let what = format!("{path} in {repo} at revision {revision}");
        let (mut linked_sha256, mut linked_size) = (None, None);
        for _ in 0..=MAX_REDIRECTS {
            let response = self.send(&url, (offset > 0).then_some(offset))?;
            let headers = response.headers();
            linked_sha256 =
                linked_sha256.or_else(|| header_text(headers, "x-linked-etag").and_then(etag_sha256));
            linked_size = linked_size
                .or_else(|| header_text(headers, "x-linked-size").and_then(|size| size.parse().ok()));
            if response.status().is_redirection() {
                let location =
                    header_text(headers, header::LOCATION.as_str()).ok_or_else(|| HubError::BadResponse {
                        url: url.to_string(),
                        reason: "a redirect without a Location".to_string(),
                    })?;
                url = url.join(&location).map_err(|error| HubError::BadResponse {
                    url: url.to_string(),
                    reason: format!("redirect to an invalid location {location:?}: {error}"),
                })?;
                continue;
            }
            if response.status() == StatusCode::RANGE_NOT_SATISFIABLE {
                return Err(HubError::RangeNotSatisfiable { url: url.to_string(), offset });
            }
            let response = self.check_status(response, &url, Some(repo), &what)?;
            let (start, total) = body_extent(&response, &url)?;
            return Ok(OpenedFile { body: response, start, total, linked_sha256, linked_size });
        }
        Err(HubError::TooManyRedirects { url: url.to_string(), limit: MAX_REDIRECTS })
    }

    fn get(&self, url: &Url, repo: Option<&str>, what: &str) -> Result<Response, HubError> {
        let response = self.send(url, None)?;
        self.check_status(response, url, repo, what)
    }

    fn send(&self, url: &Url, range_start: Option<u64>) -> Result<Response, HubError> {
        let mut request = self.http.get(url.clone());
        if let Some(token) = self.config.token.as_deref().filter(|_| url.origin() == self.endpoint.origin()) {
            request = request.bearer_auth(token);
        }
        if let Some(start) = range_start {
            request = request.header(header::RANGE, format!("bytes={start}-"));
        }
        request.send().map_err(|source| HubError::Unreachable { url: url.to_string(), source })
    }

    fn check_status(
        &self,
        response: Response,
        url: &Url,
        repo: Option<&str>,
        what: &str,
    ) -> Result<Response, HubError> {
        let status = response.status();
        match (status.as_u16(), repo) {
            (200..=299, _) => Ok(response),
            (401 | 403, Some(repo)) => Err(HubError::Gated {
                repo: repo.to_string(),
                status: status.as_u16(),
                page: endpoint_url(&self.endpoint, repo.split('/')).to_string(),
            }),
            (404, _) => {
                Err(HubError::NotFound { what: what.to_string(), endpoint: self.config.endpoint.clone() })
            }
            (status, _) => Err(HubError::Status { url: url.to_string(), status }),
        }
    }
}

/// (first byte, whole size) of a 200 or 206 answer.
fn body_extent(response: &Response, url: &Url) -> Result<(u64, Option<u64>), HubError> {
    if response.status() != StatusCode::PARTIAL_CONTENT {
        return Ok((0, response.content_length()));
    }
    let bad = |reason: String| HubError::BadResponse { url: url.to_string(), reason };
    let range = header_text(response.headers(), header::CONTENT_RANGE.as_str())
        .ok_or_else(|| bad("a 206 answer without Content-Range".to_string()))?;
    let parsed = range.strip_prefix("bytes ").and_then(|rest| {
        let (span, total) = rest.split_once('/')?;
        let (start, _end) = span.split_once('-')?;
        Some((start.trim().parse().ok()?, total.trim().parse().ok()))
    });
    parsed.ok_or_else(|| bad(format!("an unreadable Content-Range {range:?}")))
}

fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get(name)?.to_str().ok().map(str::to_string)
}

/// The sha256 in an ETag (`"…"` or `W/"…"`), when it is one.
fn etag_sha256(etag: String) -> Option<String> {
    parse_sha256(etag.trim_start_matches("W/").trim_matches('"')).ok()
}

/// The `rel="next"` target of a `Link` header.
fn next_page(headers: &HeaderMap, url: &Url) -> Option<Url> {
    let link = header_text(headers, header::LINK.as_str())?;
    link.split(',').find(|part| part.contains("rel=\"next\"")).and_then(|part| {
        let target = part.split_once('<')?.1.split_once('>')?.0;
        url.join(target).ok()
    })
}

fn read_json<T: serde::de::DeserializeOwned>(response: Response, url: &Url) -> Result<T, HubError> {
    let mut body = Vec::new();
    response
        .take(MAX_LISTING_BYTES + 1)
        .read_to_end(&mut body)
        .map_err(|source| HubError::Interrupted { url: url.to_string(), source })?;
    if body.len() as u64 > MAX_LISTING_BYTES {
        return Err(HubError::BadResponse {
            url: url.to_string(),
            reason: format!("larger than {MAX_LISTING_BYTES} bytes"),
        });
    }
    serde_json::from_slice(&body)
        .map_err(|error| HubError::BadResponse { url: url.to_string(), reason: error.to_string() })
}

fn repo_file(entry: TreeEntry, url: &Url) -> Result<RepoFile, HubError> {
    let (size, sha256) = match entry.lfs {
        Some(lfs) => {
            let sha256 = parse_sha256(&lfs.oid).map_err(|error| HubError::BadResponse {
                url: url.to_string(),
                reason: format!("{}: {error}", entry.path),
            })?;
            (lfs.size, Some(sha256))
        }
        None => (entry.size, None),
    };
    Ok(RepoFile { path: entry.path, size, sha256 })
}
