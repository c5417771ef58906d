"""What each page shows, described outside Streamlit (after bertviz: a view takes data, it does
not run models or draw widgets).

One module per page (layer_heads, head_stats, value_norms, positions, windows, step_by_step,
lesson). Its functions take a Trace (or the numbers a page computes from one) and the page's
choices (layer, head, tab, step...) and return what the page shows: blocks of
attnviz.export.html (Heading, Markdown, Tex, Code, Table, Numbers...) and plotly Figures, in
the order shown. Figures come from attnviz.plotting, numbers from attnviz.analysis, text
through attnviz.i18n.

Two renderers take the same blocks:

    ui.render(blocks, where=column)        a Streamlit page (pages/*.py): the page keeps its
                                           widgets, tabs and columns and draws each part
    export.write_site(out, views)          the lesson pack (attnviz.export.site): each
                                           module's `page(...)` is the page as it opens

No Streamlit here.
"""
