from __future__ import annotations

from nexusmem.cli.main import main

if __name__ == "__main__":
    main()
