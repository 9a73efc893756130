"""The book's build tools: the chapters (``book/NN_*.ipynb``) made into every edition.

One package, installed editable into the build's environments (``tools/pyproject.toml``;
``requirements.txt`` and ``requirements-homework.txt`` name it), each tool run as
``python -m editions.<tool>`` (the Makefile's targets do). Nothing here is shipped to readers.

What every edition reads the same way:

* :mod:`~editions.myst`: the one MyST grammar (markdown-it-py and mdit-py-plugins);
* :mod:`~editions.solutions`: the one solution grammar (solution blocks, predictions, model
  answers, exercise headings);
* :mod:`~editions.book`: the table of contents, chapter numbers and figure numbers (the site's
  extension, ``_ext/bqkv_site.py``, numbers figures with it too);
* :mod:`~editions.passes`: an edition as pure passes composed in order (a pass returns a new
  notebook and leaves its input as it was; editions share passes, e.g. the reader's Markdown);
* :mod:`~editions.cells`: what every edition does to cells (cleared outputs);
* :mod:`~editions.generated`: a generated file, written or checked to be current;
* :mod:`~editions.paths`: where the repository is.

The editions, and the target that makes each:

==========================  ===========================================  ==================================
tool                        writes                                       make target
==========================  ===========================================  ==================================
``site_solutions``          the public site's folds of the solutions     ``site``
``export_reader``           reader notebooks (the buttons open them)     ``reader-notebooks``
``student``                 the students' site and notebooks             ``student``
``assignments``             nbgrader homework, source and release        ``assignments``
``instructor``              the instructor's bundle (answer key)         ``instructor``
``otter_assign``            otter-grader homework                        ``assignments-otter``
``translate_nb``, ``prints``  a notebook's words in another language       (with the above)
``i18n``                    the Chinese site's config, catalog status    ``site-zh``, ``i18n-status``
``share_static``            one copy of the editions' large shared files ``site-zh``
``notebooks_branch``        the branch the Colab and Binder buttons open ``notebooks-branch``
``teachers``, ``marks``     the teachers page, exercise lines            ``teachers`` (``marks``: by hand)
``bootstrap``, ``seal``     install cells, sealed prediction answers     ``seal`` (``bootstrap``: by hand)
``publish``, ``clean_nb``   the workflow's preflight, clean commits      the workflow, ``strip``
==========================  ===========================================  ==================================

Imports point one way: no module imports the package root or the scripts beside the package
(``tools/bench*.py`` and the rest), and there is no circle (``tests/test_layout.py``).
"""
