"""The baseline: a pygls server with nothing in it, started the same way as Memento."""

from lsprotocol import types
from pygls.lsp.server import LanguageServer

server = LanguageServer("bare", "0")


@server.feature(types.INITIALIZED)
def initialized(params: types.InitializedParams) -> None:
    return None


if __name__ == "__main__":
    server.start_io()
