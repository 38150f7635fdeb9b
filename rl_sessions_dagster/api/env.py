"""Where the client looks for its key and origin; a module of its own so that reading them
(the resource's field descriptions do, at import) does not import ``httpx``."""

API_KEY_ENV = "TOGETHER_API_KEY"
BASE_URL_ENV = "TOGETHER_BASE_URL"
DEFAULT_BASE_URL = "https://api.together.ai"
