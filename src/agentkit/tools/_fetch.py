"""`WebFetch` / `fetch_content`: HTTP(S) fetches that cannot be turned against the host.

Safety rules, applied to the first URL and again to every redirect (redirects are followed
by hand, one hop at a time):

- the calling agent's permission rules (`WebFetch(domain:example.com)`): every hop must
  pass them, not only the first URL;
- only `http` and `https` URLs, without credentials in them;
- the host is resolved first and *every* address it resolves to is checked; loopback,
  private, link-local (cloud metadata included), unspecified, multicast, reserved and
  other non-global addresses are refused unless the [`FetchPolicy`][agentkit.tools.FetchPolicy]
  allows them. Numeric host spellings (`2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1`,
  `::ffff:127.0.0.1`) are decoded and checked without any DNS lookup;
- the connection goes to the checked address (the URL is rewritten to the IP, with the
  original `Host` header and TLS server name), so a second DNS answer cannot differ from
  the one that was checked; proxies from the environment are not used;
- the whole fetch has a time cap and the body a size cap.

A host enables private addresses with `services={"fetch_policy": FetchPolicy(...)}`.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit

import anyio

from agentkit.tools._base import Tool, ToolContext, ToolError, object_schema
from agentkit.tools._rules import call_restrictions, url_allowed, url_matcher

__all__ = [
    "FetchPolicy",
    "FetchResult",
    "address_refusal",
    "fetch_tool",
    "fetch_url",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_REDIRECTS = (301, 302, 303, 307, 308)


@dataclass(frozen=True)
class FetchPolicy:
    """Limits for `WebFetch`; put one in `ToolContext.services["fetch_policy"]`.

    Attributes:
        allow_private: Allow every non-public address (loopback, private, link-local ...).
        allowed_networks: Networks allowed even though they are not public, e.g.
            `("127.0.0.1/32",)`; narrower than `allow_private`.
        max_bytes: Body bytes read at most; the rest is dropped (and said so).
        timeout: Seconds for the whole fetch, redirects included.
        max_redirects: Redirect hops followed at most.
        max_chars: Characters of text returned to the model at most.
    """

    allow_private: bool = False
    allowed_networks: tuple[str, ...] = ()
    max_bytes: int = 2 * 1024 * 1024
    timeout: float = 30.0
    max_redirects: int = 5
    max_chars: int = 100_000
    _networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = field(
        init=False, repr=False, compare=False, default=()
    )

    def __post_init__(self) -> None:
        networks = tuple(ipaddress.ip_network(n, strict=False) for n in self.allowed_networks)
        object.__setattr__(self, "_networks", networks)

    def refusal(self, address: IPAddress) -> str | None:
        """Why `address` may not be contacted under this policy, or `None` if it may."""
        reason = address_refusal(address)
        if reason is None or self.allow_private:
            return None
        if any(address.version == n.version and address in n for n in self._networks):
            return None
        return reason


@dataclass(frozen=True)
class FetchResult:
    """What a fetch returned."""

    url: str
    status: int
    content_type: str
    body: bytes
    truncated: bool


def address_refusal(address: IPAddress) -> str | None:
    """Why a fetch to `address` is refused by default (`None` for public addresses)."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in ipaddress.ip_network("64:ff9b::/96"):
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            return address_refusal(embedded)
    checks = (
        ("is_unspecified", "an unspecified address"),
        ("is_loopback", "a loopback address"),
        ("is_link_local", "a link-local address"),
        ("is_multicast", "a multicast address"),
        ("is_private", "a private address"),
        ("is_reserved", "a reserved address"),
    )
    for attribute, label in checks:
        if getattr(address, attribute):
            return label
    if not address.is_global:
        return "not a public address"
    return None


_NUMERIC_HOST = re.compile(r"[0-9a-fA-FxX.]+")


def _literal_address(host: str) -> IPAddress | None:
    """The address a numeric host spells, in any form `inet_aton` accepts."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if _NUMERIC_HOST.fullmatch(host) and any(c.isdigit() for c in host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


async def _checked_address(host: str, port: int, policy: FetchPolicy) -> IPAddress:
    """Resolve `host`, check every answer, and return the address to connect to."""
    literal = _literal_address(host)
    if literal is not None:
        addresses = [literal]
    else:
        lowered = host.lower().rstrip(".")
        if lowered == "localhost" or lowered.endswith(".localhost"):
            addresses = [ipaddress.ip_address("127.0.0.1")]
        else:
            try:
                infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except OSError as exc:
                raise ToolError(f"cannot resolve {host}: {exc}") from None
            addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    if not addresses:
        raise ToolError(f"cannot resolve {host}")
    for address in addresses:
        reason = policy.refusal(address)
        if reason is not None:
            raise ToolError(
                f"refused to fetch from {host}: it resolves to {address}, {reason} "
                "(the host may allow it with a FetchPolicy)"
            )
    return addresses[0]


def _host_header(host: str, port: int, default_port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return shown if port == default_port else f"{shown}:{port}"


async def fetch_url(
    url: str,
    policy: FetchPolicy | None = None,
    *,
    allow: Callable[[str], bool] | None = None,
) -> FetchResult:
    """GET `url` under `policy` (the default refuses non-public addresses).

    Args:
        url: The URL.
        policy: Address, size, time and redirect limits.
        allow: The permission rules: every URL fetched, the first and each redirect's,
            must pass it (a `domain:` rule that allowed the first URL must allow every
            hop, or the redirect is refused).

    Raises:
        ToolError: The URL or an address on the way is refused, the fetch failed or took
            longer than the policy allows.
    """
    try:
        import httpx  # optional extra `tools`
    except ModuleNotFoundError:
        raise ToolError("fetching needs httpx: pip install 'typed-agentkit[tools]'") from None

    policy = policy or FetchPolicy()
    try:
        with anyio.fail_after(policy.timeout):
            async with httpx.AsyncClient(
                follow_redirects=False, trust_env=False, timeout=policy.timeout
            ) as client:
                for hop in range(policy.max_redirects + 1):
                    if allow is not None and not allow(url):
                        what = "a redirect to" if hop else "fetching"
                        raise ToolError(f"{what} {url} is not allowed by the permission rules")
                    result = await _one_hop(client, url, policy)
                    if isinstance(result, FetchResult):
                        return result
                    url = result
    except TimeoutError:
        raise ToolError(f"fetching {url} took longer than {policy.timeout:g} s") from None
    except (httpx.HTTPError, httpx.InvalidURL, httpx.CookieConflict) as exc:
        raise ToolError(f"fetching {url} failed: {exc}") from None
    except ValueError as exc:  # a URL urllib or the IDNA codec cannot take (UnicodeError too)
        raise ToolError(f"cannot fetch {url!r}: {exc}") from None
    raise ToolError(f"too many redirects (more than {policy.max_redirects})")


async def _one_hop(client: Any, url: str, policy: FetchPolicy) -> FetchResult | str:
    """Fetch one hop; return the result, or the next URL for a redirect."""
    if "\x00" in url or any(ch in url for ch in "\r\n"):
        raise ToolError("the URL contains control characters")
    if "\\" in re.split(r"[?#]", url, maxsplit=1)[0]:
        # Browsers read `http:\\host` as `http://host`; urllib does not (and httpx then
        # raised InvalidURL). Refuse it rather than guess which host was meant.
        raise ToolError(f"{url!r} has a backslash before its query; it is not a valid URL")
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ToolError(f"only http and https URLs can be fetched, not {scheme or 'none'!r}")
    if parts.username is not None or parts.password is not None:
        raise ToolError("URLs with credentials are not fetched")
    host = parts.hostname
    if not host:
        raise ToolError(f"{url!r} has no host")
    default_port = 443 if scheme == "https" else 80
    try:
        port = parts.port or default_port
    except ValueError:
        raise ToolError(f"{url!r} has an invalid port") from None
    address = await _checked_address(host, port, policy)
    ip_host = f"[{address}]" if address.version == 6 else str(address)
    target = f"{scheme}://{ip_host}:{port}{parts.path or '/'}"
    if parts.query:
        target += f"?{parts.query}"
    extensions = {"sni_hostname": host} if scheme == "https" else {}
    request = client.build_request(
        "GET",
        target,
        headers={
            "Host": _host_header(host, port, default_port),
            "User-Agent": "agentkit-fetch/1",
            "Accept": "text/html, text/plain, application/json, */*;q=0.5",
            # Ask for the body as is, so the size cap counts what is really read.
            "Accept-Encoding": "identity",
        },
        extensions=extensions,
    )
    response = await client.send(request, stream=True)
    try:
        location = response.headers.get("location")
        if response.status_code in _REDIRECTS and location:
            return urljoin(url, str(location))
        body = bytearray()
        truncated = False
        async for chunk in response.aiter_bytes():
            body.extend(chunk)
            if len(body) > policy.max_bytes:
                del body[policy.max_bytes :]
                truncated = True
                break
        return FetchResult(
            url=url,
            status=response.status_code,
            content_type=response.headers.get("content-type", ""),
            body=bytes(body),
            truncated=truncated,
        )
    finally:
        await response.aclose()


class _TextExtractor(HTMLParser):
    _SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head"})
    _BLOCK = frozenset(
        {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "pre"}
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if tag in self._SKIP:
            self.skipping += 1
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in self._SKIP and self.skipping:
            self.skipping -= 1
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        if not self.skipping:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    """Readable text of an HTML page (scripts, styles and markup removed)."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    text = "\n".join(line for line in lines if line)
    title = " ".join(parser.title.split())
    return f"# {title}\n\n{text}" if title else text


def _charset(content_type: str) -> str:
    match = re.search(r"charset=([\w.-]+)", content_type, re.IGNORECASE)
    return match.group(1) if match else "utf-8"


def render(result: FetchResult, max_chars: int) -> str:
    """The model-facing text of a fetch result."""
    kind = result.content_type.split(";")[0].strip().lower()
    if kind and not (
        kind.startswith("text/") or kind.endswith(("json", "xml", "javascript")) or "html" in kind
    ):
        return (
            f"URL: {result.url}\nStatus: {result.status}\nContent-Type: {kind}\n\n"
            f"[binary content, {len(result.body)} bytes, not shown]"
        )
    try:
        text = result.body.decode(_charset(result.content_type), errors="replace")
    except LookupError:
        text = result.body.decode("utf-8", errors="replace")
    if "html" in kind:
        text = html_to_text(text)
    notes = []
    if result.truncated:
        notes.append(f"[body truncated at {len(result.body)} bytes]")
    if len(text) > max_chars:
        text = text[:max_chars]
        notes.append(f"[text truncated at {max_chars} characters]")
    head = f"URL: {result.url}\nStatus: {result.status}\nContent-Type: {kind or 'unknown'}\n\n"
    return head + text + ("\n" + "\n".join(notes) if notes else "")


def policy_of(ctx: ToolContext) -> FetchPolicy:
    """The context's FetchPolicy (`services["fetch_policy"]`), or the default one."""
    policy = ctx.services.get("fetch_policy")
    if policy is None:
        return FetchPolicy()
    if not isinstance(policy, FetchPolicy):
        raise ToolError("services['fetch_policy'] must be an agentkit.tools.FetchPolicy")
    return policy


_FETCH_NAMES = ("WebFetch", "fetch_content")


def fetch_tool() -> Tool:
    """The `WebFetch` / `fetch_content` tool (effect `read`; needs the `tools` extra)."""

    async def run(args: dict[str, Any], ctx: ToolContext) -> str:
        policy = policy_of(ctx)
        rules = call_restrictions(_FETCH_NAMES, ctx)
        allow = None
        if rules is not None:
            specifiers = rules

            def allow(url: str) -> bool:
                return any(url_allowed(specifier, url) for specifier in specifiers)

        result = await fetch_url(str(args["url"]), policy, allow=allow)
        return render(result, policy.max_chars)

    return Tool(
        name=_FETCH_NAMES[0],
        aliases=_FETCH_NAMES[1:],
        description=(
            "Fetch an http(s) URL and return its content as text (HTML is converted to "
            "plain text). Private and local network addresses are refused. Use `prompt` to "
            "note what you are looking for; the page text is returned as is."
        ),
        input_schema=object_schema(
            {
                "url": {"type": "string", "description": "The http or https URL to fetch."},
                "prompt": {
                    "type": "string",
                    "description": "What to look for in the page (for your own reference).",
                },
            },
            "url",
        ),
        function=run,
        effect="read",
        timeout=120.0,
        matches=url_matcher("url"),
    )
